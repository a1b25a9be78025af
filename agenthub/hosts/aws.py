"""AWS glue for Amazon Bedrock, in the standard library: SigV4 signing, credentials, region, endpoint.

Signature Version 4 (``sign_v4``) is computed with ``hmac`` and ``hashlib`` over the exact body bytes
that are sent, once per attempt (a retry gets a fresh date and signature):

- canonical request: method, the URI path encoded once more (``%3A`` in a model id becomes ``%253A``:
  every AWS service but S3 signs the path double-encoded), the sorted query, the signed headers
  (lower-cased names, values with runs of spaces folded, sorted), their names joined by ``;``, and the
  SHA-256 of the body;
- string to sign: ``AWS4-HMAC-SHA256``, the ``X-Amz-Date``, the scope ``<date>/<region>/<service>/aws4_request``
  and the SHA-256 of the canonical request;
- the signing key: HMAC-SHA256 chained over ``"AWS4" + secret``, date, region, service, ``aws4_request``.

Every header of the request is signed (``Host`` is added from the URL, hop-by-hop and user-agent headers
are not signed, as botocore does); a session token goes in ``X-Amz-Security-Token`` and is signed too.
The tests check the result against ``botocore.auth.SigV4Auth`` on the same requests.

Credentials (``credentials_from``), in the order the AWS SDKs use:

1. ``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` (+ ``AWS_SESSION_TOKEN``);
2. the shared credentials file (``AWS_SHARED_CREDENTIALS_FILE``, default ``~/.aws/credentials``),
   section ``[<profile>]``;
3. the config file (``AWS_CONFIG_FILE``, default ``~/.aws/config``), section ``[profile <name>]``
   (``[default]`` for the default profile).

The profile is ``AWS_PROFILE`` (or ``AWS_DEFAULT_PROFILE``), else ``default``.  A profile that gets its
credentials some other way (``role_arn``, ``sso_*``, ``credential_process``, ``web_identity_token_file``)
is a ConfigError that says how to export static credentials; agenthub runs no commands and calls no
STS.  The region is ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else the profile's ``region``.

Bedrock API keys (``AWS_BEARER_TOKEN_BEDROCK``, or ``api_key=``) go as ``Authorization: Bearer``
without SigV4.

Nothing here prints a secret: ``Credentials`` and ``BedrockAuth`` show only the access key id's first
four characters, and the errors name variables and files, never values.
"""

import configparser
import datetime
import hashlib
import hmac
import os
import re
import string
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ..errors import ConfigError
from ..validate import check_header_value
from ..providers._common import encode_path_segment
from . import Host
from .credentials import check_not_private_key
from .trust import check_base_url, host_is, is_loopback, split_authority, url_host

__all__ = [
    "Credentials",
    "BedrockAuth",
    "credentials_from",
    "region_from",
    "profile_name",
    "sign_v4",
    "canonical_request",
    "canonical_uri",
    "sendable_url",
    "encode_path_segment",
    "host_header",
    "is_aws_host",
    "region_from_host",
    "default_endpoint",
    "resolve_bedrock",
    "SERVICE",
    "BEARER_ENV",
]

#: the SigV4 signing name of bedrock-runtime (botocore's service model: signingName "bedrock")
SERVICE = "bedrock"
BEARER_ENV = "AWS_BEARER_TOKEN_BEDROCK"
ENDPOINT_ENVS = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL")
ALGORITHM = "AWS4-HMAC-SHA256"
#: headers never signed (what botocore leaves out: hop-by-hop, and the ones proxies rewrite)
UNSIGNED_HEADERS = frozenset(["connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization",
                              "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
                              "authorization"])
#: profile keys that mean "credentials come from somewhere agenthub does not go"
_INDIRECT_KEYS = ("role_arn", "credential_process", "sso_session", "sso_start_url", "sso_account_id",
                  "web_identity_token_file", "credential_source", "login_session")


#: how each part of a set of credentials is named in errors, by where it was read
_FIELD_NAMES = {"environment": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}


class Credentials(object):
    """AWS credentials: access key id, secret access key and an optional session token."""

    __slots__ = ("access_key", "secret_key", "token", "source")

    def __init__(self, access_key: str, secret_key: str, token: Optional[str] = None, source: str = "") -> None:
        if not isinstance(access_key, str) or not access_key or not isinstance(secret_key, str) or not secret_key:
            raise ConfigError("AWS credentials need an access key id and a secret access key")
        if token is not None and not isinstance(token, str):  # dropped, it would sign a request AWS refuses
            raise ConfigError("the AWS session token must be a string (got {})".format(type(token).__name__))
        token = token or None
        names = _FIELD_NAMES.get(source, ("access key id", "secret access key", "session token"))
        for value, name in zip((access_key, secret_key, token), names):
            if value is not None:  # a CR or LF from a .env file: refused now, never at the call
                check_header_value(value, "AWS credentials{}: {}".format(" (" + source + ")" if source else "", name))
        self.access_key = access_key
        self.secret_key = secret_key
        self.token = token
        #: where they came from: "environment", "credentials file (profile x)", ...
        self.source = source

    def __repr__(self) -> str:
        return "Credentials(access_key={!r}, secret_key='***', token={}, source={!r})".format(
            self.access_key[:4] + "***", "'***'" if self.token else None, self.source)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Credentials) and (self.access_key, self.secret_key, self.token) == (
            other.access_key, other.secret_key, other.token)

    __hash__ = None  # type: ignore[assignment]

    def secrets(self) -> List[str]:
        return [value for value in (self.secret_key, self.token) if value]

    def __getstate__(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)


# -- shared files ---------------------------------------------------------------------------------


def profile_name(environ: Mapping[str, str]) -> str:
    return environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"


def _path(environ: Mapping[str, str], variable: str, default: str) -> str:
    path = environ.get(variable) or default
    home = environ.get("HOME")
    if path.startswith("~") and home:
        path = home + path[1:]
    return os.path.expanduser(path)


def _read_ini(path: str) -> Optional[configparser.RawConfigParser]:
    if not os.path.isfile(path):
        return None
    parser = configparser.RawConfigParser()
    try:
        with open(path, encoding="utf-8") as handle:
            parser.read_file(handle)
    except (configparser.Error, UnicodeDecodeError, OSError) as exc:
        raise ConfigError("cannot read the AWS file {}: {}".format(path, _ini_problem(exc))) from None
    return parser


def _ini_problem(exc: BaseException) -> str:
    """Where a shared file is broken and how, by line number: never the line (it may be a secret), nor an
    option's name (a pasted secret holding "=" parses as one)."""
    if isinstance(exc, configparser.DuplicateOptionError):
        return "line {}: an option repeated in the section [{}]".format(exc.lineno, exc.section)
    if isinstance(exc, configparser.DuplicateSectionError):
        return "line {}: the section [{}] appears twice".format(exc.lineno, exc.section)
    if isinstance(exc, configparser.MissingSectionHeaderError):
        return "line {}: a line before any [section]".format(exc.lineno)
    if isinstance(exc, configparser.ParsingError) and exc.errors:
        return "line {}: a line that is neither a [section] nor name = value".format(exc.errors[0][0])
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8"
    return type(exc).__name__


def _section(parser: Optional[configparser.RawConfigParser], names: Tuple[str, ...]) -> Optional[Dict[str, str]]:
    if parser is None:
        return None
    for name in names:
        if parser.has_section(name):
            return {key.strip().lower(): value.strip() for key, value in parser.items(name)}
    return None


def _profiles(environ: Mapping[str, str], profile: Optional[str]) -> Tuple[str, Optional[Dict[str, str]],
                                                                             Optional[Dict[str, str]], str, str]:
    name = profile or profile_name(environ)
    credentials_path = _path(environ, "AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
    config_path = _path(environ, "AWS_CONFIG_FILE", "~/.aws/config")
    creds = _section(_read_ini(credentials_path), (name,))
    config_names = ("default", "profile default") if name == "default" else ("profile " + name, name)
    config = _section(_read_ini(config_path), config_names)
    return name, creds, config, credentials_path, config_path


def _static(section: Optional[Dict[str, str]], source: str) -> Optional[Credentials]:
    if not section:
        return None
    key, secret = section.get("aws_access_key_id"), section.get("aws_secret_access_key")
    if key and secret:
        token = section.get("aws_session_token") or section.get("aws_security_token")
        return Credentials(key, secret, token or None, source)
    return None


def credentials_from(environ: Optional[Mapping[str, str]] = None, profile: Optional[str] = None) -> Optional[Credentials]:
    """Static AWS credentials from the environment or the shared files; None when there are none."""
    env = os.environ if environ is None else environ
    if profile is None:
        key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if key and secret:
            return Credentials(key, secret, env.get("AWS_SESSION_TOKEN") or None, "environment")
        if key or secret:
            missing = "AWS_SECRET_ACCESS_KEY" if key else "AWS_ACCESS_KEY_ID"
            raise ConfigError("AWS credentials in the environment are incomplete: {} is not set".format(missing))
    name, creds, config, credentials_path, config_path = _profiles(env, profile)
    found = _static(creds, "credentials file (profile {})".format(name)) or _static(
        config, "config file (profile {})".format(name))
    if found is not None:
        return found
    for section, path in ((config, config_path), (creds, credentials_path)):
        if section:
            indirect = [key for key in _INDIRECT_KEYS if key in section]
            if indirect:
                raise ConfigError(
                    "AWS profile {!r} ({}) gets its credentials through {}, which agenthub does not resolve: export "
                    "static credentials first (`aws configure export-credentials --profile {} --format env`), or "
                    "use a Bedrock API key ({})".format(name, path, indirect[0], name, BEARER_ENV))
    if profile is not None or env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE"):
        if creds is None and config is None:
            raise ConfigError("AWS profile {!r} is in neither {} nor {}".format(name, credentials_path, config_path))
    return None


def region_from(environ: Optional[Mapping[str, str]] = None, profile: Optional[str] = None) -> Optional[str]:
    """``AWS_REGION``, ``AWS_DEFAULT_REGION`` or the profile's ``region``; None when none is set."""
    env = os.environ if environ is None else environ
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        return region.strip()
    _, _, config, _, _ = _profiles(env, profile)
    if config and config.get("region"):
        return config["region"]
    return None


# -- endpoints ------------------------------------------------------------------------------------

#: each AWS partition's DNS suffix, by the prefix of its region names (botocore's endpoints data: aws-cn,
#: aws-iso, aws-iso-b, aws-iso-f, aws-iso-e, aws-eusc); every other region is in amazonaws.com
_PARTITION_SUFFIXES = (("cn-", "amazonaws.com.cn"), ("us-isob-", "sc2s.sgov.gov"), ("us-isof-", "csp.hci.ic.gov"),
                       ("us-iso-", "c2s.ic.gov"), ("eu-isoe-", "cloud.adc-e.uk"), ("eusc-", "amazonaws.eu"))
_AWS_SUFFIXES = (".amazonaws.com", ".api.aws") + tuple("." + suffix for _, suffix in _PARTITION_SUFFIXES)
_REGION_IN_HOST = re.compile(r"(?:^|\.)bedrock-runtime(?:-fips)?\.([a-z]{2,4}(?:-[a-z]+)+-\d+)\.")


def _hostname(url: str) -> str:
    return url_host(url)


def is_aws_host(url: str) -> bool:
    """True for AWS's own hosts (``*.amazonaws.com``, ``*.amazonaws.com.cn``, ``*.api.aws``, ...), as the
    connecting parser reads the host (``hosts.trust``)."""
    return host_is(url, suffixes=_AWS_SUFFIXES)


def region_from_host(url: str) -> Optional[str]:
    """The region named in a bedrock-runtime host (``bedrock-runtime.eu-west-1.amazonaws.com``, VPC endpoints)."""
    match = _REGION_IN_HOST.search(_hostname(url))
    return match.group(1) if match else None


def default_endpoint(region: str) -> str:
    """``https://bedrock-runtime.{region}.amazonaws.com``, in the region's partition (``.amazonaws.com.cn`` in
    the China regions, ``.amazonaws.eu`` in the European Sovereign Cloud, the ISO partitions' own suffixes)."""
    suffix = next((dns for prefix, dns in _PARTITION_SUFFIXES if region.startswith(prefix)), "amazonaws.com")
    return "https://bedrock-runtime.{}.{}".format(region, suffix)


def host_header(url: str) -> str:
    """The Host header for ``url``: lower-cased host, the port only when it is not the scheme's default."""
    scheme, _, host, port = split_authority(url)
    if ":" in host:
        host = "[" + host + "]"
    default = {"http": 80, "https": 443}.get(scheme)
    if port is not None and port != default:
        host += ":" + str(port)
    return host


# -- SigV4 ----------------------------------------------------------------------------------------


def _remove_dot_segments(path: str) -> str:
    out = []  # type: List[str]
    for segment in path.split("/"):
        if not segment or segment == ".":
            continue
        if segment == "..":
            if out:
                out.pop()
        else:
            out.append(segment)
    result = "/" + "/".join(out)
    if path.endswith("/") and out:
        result += "/"
    return result


def canonical_uri(url: str) -> str:
    """The path as SigV4 signs it for every service but S3: normalised, then percent-encoded again."""
    path = urlsplit(url).path or "/"
    return quote(_remove_dot_segments(path), safe="/~")


def _canonical_query(url: str) -> str:
    query = urlsplit(url).query
    if not query:
        return ""
    pairs = []
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        pairs.append((quote(unquote(key), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join("{}={}".format(k, v) for k, v in sorted(pairs))


def _signed(headers: Mapping[str, str]) -> List[Tuple[str, str]]:
    """(lower-cased name, folded value) of the headers to sign, sorted; repeated names joined by commas."""
    merged = {}  # type: Dict[str, List[str]]
    for name, value in headers.items():
        lower = name.lower().strip()
        if lower in UNSIGNED_HEADERS:
            continue
        merged.setdefault(lower, []).append(" ".join(str(value).split()))
    return [(name, ",".join(merged[name])) for name in sorted(merged)]


def canonical_request(method: str, url: str, headers: Mapping[str, str], body: bytes) -> Tuple[str, str]:
    """-> (canonical request, signed header names) for ``headers`` as they will be sent."""
    signed = _signed(headers)
    names = ";".join(name for name, _ in signed)
    text = "\n".join([
        method.upper(),
        canonical_uri(url),
        _canonical_query(url),
        "".join("{}:{}\n".format(name, value) for name, value in signed),
        names,
        hashlib.sha256(body or b"").hexdigest(),
    ])
    return text, names


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def sign_v4(method: str, url: str, headers: Mapping[str, str], body: bytes, credentials: Credentials, region: str,
            service: str = SERVICE, when: Optional[datetime.datetime] = None) -> Dict[str, str]:
    """``headers`` plus Host, X-Amz-Date, X-Amz-Security-Token (with a session token) and Authorization.

    ``body`` is the exact bytes to send; ``when`` (UTC) defaults to now.  Any earlier Authorization,
    X-Amz-Date and X-Amz-Security-Token are replaced (a retry is signed afresh).
    """
    if when is None:
        when = datetime.datetime.now(datetime.timezone.utc)
    elif when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    out = {name: value for name, value in headers.items()
           if name.lower() not in ("authorization", "x-amz-date", "x-amz-security-token", "host")}
    out["Host"] = host_header(url)
    out["X-Amz-Date"] = stamp
    if credentials.token:
        out["X-Amz-Security-Token"] = credentials.token
    text, names = canonical_request(method, url, out, body)
    scope = "{}/{}/{}/aws4_request".format(day, region, service)
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(text.encode("utf-8")).hexdigest()])
    key = _hmac(("AWS4" + credentials.secret_key).encode("utf-8"), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    out["Authorization"] = "{} Credential={}/{}, SignedHeaders={}, Signature={}".format(
        ALGORITHM, credentials.access_key, scope, names, signature)
    return out


# -- what a Bedrock client sends with -------------------------------------------------------------


class BedrockAuth(object):
    """How a Bedrock request is authenticated: ``bearer`` (an API key), ``sigv4`` (credentials + region)
    or ``none`` (a loopback endpoint given without credentials)."""

    __slots__ = ("kind", "token", "credentials", "region", "source")

    def __init__(self, kind: str, token: Any = None, credentials: Optional[Credentials] = None,
                 region: Optional[str] = None, source: str = "") -> None:
        self.kind = kind
        self.token = token
        self.credentials = credentials
        self.region = region
        self.source = source

    def apply(self, method: str, url: str, headers: Mapping[str, str], body: bytes,
              when: Optional[datetime.datetime] = None) -> Dict[str, str]:
        """The headers to send ``body`` with (signed afresh on every call).  An Authorization the caller set
        is sent as it is, as on every other host; under SigV4 the client refuses one before this is reached
        (``_check_headers``), since the signature takes its place."""
        if self.kind == "sigv4":
            assert self.credentials is not None and self.region
            return sign_v4(method, url, headers, body, self.credentials, self.region, SERVICE, when)
        out = dict(headers)
        if self.kind == "bearer" and not any(name.lower() == "authorization" for name in out):
            token = self.token
            if callable(token):  # a token provider: asked once per attempt (so a refreshing one works)
                from .credentials import bearer_token

                token = bearer_token(token, "bedrock")
            out["Authorization"] = "Bearer " + (token or "")
        return out

    def secrets(self) -> List[str]:
        if self.kind == "bearer" and isinstance(self.token, str) and self.token:
            return [self.token]
        if self.credentials is not None:
            return self.credentials.secrets()
        return []

    def __repr__(self) -> str:
        if self.kind == "sigv4":
            return "BedrockAuth(sigv4, region={!r}, {!r})".format(self.region, self.credentials)
        return "BedrockAuth({}{})".format(self.kind, ", token='***'" if self.token else "")

    def __getstate__(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)


_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
#: what a path keeps as it is: RFC 3986's pchar and "/"
_PATH_KEEPS = _UNRESERVED | frozenset("!$&'()*+,;=:@/")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def sendable_url(url: str) -> str:
    """``url`` with its path in the form requests sends unchanged: an escape of an unreserved character
    decoded (``%7E`` -> ``~``), the others in upper case, a character a path cannot hold (``é``, ``[``,
    a space, a lone ``%``) percent-encoded as UTF-8.  SigV4 signs the path the server receives; requests
    re-quotes a path that is not in this form (and a lone ``%`` makes it escape every ``%`` of the URL,
    the model id's ``%3A`` too), so the signature would not match."""
    parts = urlsplit(url)
    path, out, at = parts.path, [], 0
    while at < len(path):
        if _ESCAPE.match(path, at):
            char = chr(int(path[at + 1:at + 3], 16))
            out.append(char if char in _UNRESERVED else path[at:at + 3].upper())
            at += 3
            continue
        char = path[at]
        out.append(char if char in _PATH_KEEPS else quote(char.encode("utf-8", "surrogatepass"), safe=""))
        at += 1
    return urlunsplit(parts._replace(path="".join(out)))


def _check_url(url: str, what: str) -> str:
    """An endpoint: an http(s) URL whose host every parser reads alike (hosts.trust), with no query string or
    fragment (the model's path is appended to it), its path in the form requests sends (``sendable_url``)."""
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]", url):
        raise ConfigError("{} must be an http(s) URL".format(what))
    check_base_url(url, what)
    if "?" in url or "#" in url:
        raise ConfigError("{} takes no query string or fragment: the request's path is appended to it (got {!r})"
                          .format(what, _hostname(url)))
    return sendable_url(url).rstrip("/")


def resolve_bedrock(base_url: Optional[str] = None, api_key: Any = None,
                    environ: Optional[Mapping[str, str]] = None) -> Tuple[str, BedrockAuth]:
    """-> (endpoint URL, BedrockAuth) for a Bedrock client, following the credential rule.

    Endpoint: ``base_url``, else ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else ``AWS_ENDPOINT_URL``, else
    ``https://bedrock-runtime.{region}.amazonaws.com``.  Authentication: ``api_key`` (a Bedrock API key,
    or a ``Credentials``), else ``AWS_BEARER_TOKEN_BEDROCK``, else SigV4 with credentials from the
    environment or the shared files.  Credentials from the environment or the files go only to AWS's
    own hosts or to the endpoint the ``AWS_ENDPOINT_URL*`` variables name; a ``base_url`` elsewhere needs
    ``api_key`` (a loopback one is sent unsigned without it).  The region (for the default endpoint and
    the signature) comes from the environment, the profile, or the endpoint's host name.
    """
    env = os.environ if environ is None else environ
    env_url = None  # type: Optional[str]
    for name in ENDPOINT_ENVS:
        if env.get(name):
            env_url = _check_url(env[name], name)
            break
    if base_url is not None:
        url = _check_url(base_url, "base_url")
        trusted = is_aws_host(url) or (env_url is not None and url == env_url)
    else:
        url = env_url or ""
        trusted = True

    if isinstance(api_key, Credentials):
        region = _need_region(_region(env, url))
        return url or default_endpoint(region), BedrockAuth("sigv4", credentials=api_key, region=region,
                                                            source="api_key")
    if api_key is not None:
        if not (isinstance(api_key, str) and api_key) and not (callable(api_key) and not isinstance(api_key, bytes)):
            raise ConfigError("api_key must be a Bedrock API key (a string, or a callable returning one per request) "
                              "or agenthub.aws.Credentials")
        if not url:
            url = default_endpoint(_need_region(_region(env, url)))
        return url, _bearer(api_key, "api_key", url)

    if not trusted:
        if is_loopback(url):
            return url, BedrockAuth("none", source="loopback")
        raise ConfigError(
            "api_key is required with base_url {!r}: AWS credentials from the environment are only sent to AWS "
            "endpoints or to the endpoint AWS_ENDPOINT_URL_BEDROCK_RUNTIME / AWS_ENDPOINT_URL names".format(
                _hostname(url) or url))
    token = env.get(BEARER_ENV)
    if token:
        if not url:
            url = default_endpoint(_need_region(_region(env, url)))
        return url, _bearer(token, BEARER_ENV, url)
    credentials = credentials_from(env)
    found = _region(env, url)
    if credentials is None:
        if url and is_loopback(url):
            return url, BedrockAuth("none", source="loopback")
        raise ConfigError(
            "no AWS credentials for Bedrock: set {} (a Bedrock API key), or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or a profile in ~/.aws/credentials (AWS_PROFILE), "
            "or pass api_key=".format(BEARER_ENV))
    region = _need_region(found)
    return url or default_endpoint(region), BedrockAuth("sigv4", credentials=credentials, region=region,
                                                        source=credentials.source)


def _bearer(token: Any, source: str, url: str) -> BedrockAuth:
    """A Bedrock API key's auth, checked now: one header line (no CR/LF), not a credentials file's text
    (a service-account JSON, base64 or not), and only over https (botocore's BearerAuth refuses http:
    "Bearer authorization requires an HTTPS endpoint"; a loopback address is allowed for local servers)."""
    if isinstance(token, str):
        check_header_value(token, source)
        check_not_private_key(token, source)
    if url.lower().startswith("http://") and not is_loopback(url):
        raise ConfigError("a Bedrock API key is sent only over https (Bearer authorization needs TLS, as botocore "
                          "requires); {} is plain http: use https (or a loopback address for a local server)".format(
                              _hostname(url) or "the endpoint"))
    return BedrockAuth("bearer", token=token, source=source)


def _region(env: Mapping[str, str], url: str) -> Optional[str]:
    """The region a bedrock-runtime host names (it is the one to sign for), else the configured one."""
    return (region_from_host(url) if url else None) or region_from(env)


def _need_region(region: Optional[str]) -> str:
    if not region:
        raise ConfigError("no AWS region for Bedrock: set AWS_REGION (or AWS_DEFAULT_REGION, or region in the "
                          "profile of ~/.aws/config), or pass base_url='https://bedrock-runtime.<region>.amazonaws.com'")
    if not re.match(r"^[a-z0-9-]{1,40}$", region):
        raise ConfigError("AWS region {!r} is not a region name".format(region))
    return region


# -- the host record ------------------------------------------------------------------------------

_RUNTIME = re.compile(r"^(https?://(?:[^/]*\.)?)bedrock-runtime(-fips)?\.")


def _url(endpoint: Any, path: str) -> str:
    """The endpoint joined to the dialect's path; the model list is the control plane's
    (``bedrock.{region}...`` for an AWS ``bedrock-runtime`` host; another endpoint answers at its own root)."""
    base = endpoint.base_url.rstrip("/")
    if path.startswith("/foundation-models") and is_aws_host(base):
        base = _RUNTIME.sub(r"\1bedrock\2.", base, count=1)
    return base + path


def _authorise(method: str, url: str, headers: Dict[str, str], data: Optional[bytes], endpoint: Any) -> Dict[str, str]:
    """The signature (SigV4) or the API key over the exact bytes of this attempt."""
    auth = endpoint.api_key
    if isinstance(auth, BedrockAuth):
        return auth.apply(method, url, headers, data or b"")
    if isinstance(auth, str) and auth:
        headers["Authorization"] = "Bearer " + auth
    return headers


#: the headers a SigV4 signature writes itself (sign_v4): a caller's one of these names would be replaced
SIGNATURE_HEADERS = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", "Host")


def _check_headers(headers: Mapping[str, str], endpoint: Any, what: str) -> None:
    """Under SigV4 a caller's ``Authorization``, ``X-Amz-Date``, ``X-Amz-Security-Token`` or ``Host`` would be
    replaced by the signature's own (never sent): a ConfigError before anything is sent, not a header lost.
    A Bedrock API key or a loopback endpoint without credentials sends the caller's headers as they are."""
    auth = endpoint.api_key
    if not (isinstance(auth, BedrockAuth) and auth.kind == "sigv4"):
        return
    for name in headers or {}:
        if isinstance(name, str) and name.lower() in {own.lower() for own in SIGNATURE_HEADERS}:
            raise ConfigError(
                "{} sets {!r}, which this Bedrock client's SigV4 signature writes itself: it would be replaced, "
                "never sent. Leave it out (a gateway that takes its own Authorization is reached with api_key= set "
                "to its key, or without AWS credentials)".format(what, name))


def _configure(row: Any, model: str, base_url: Optional[str], api_key: Any,
               environ: Mapping[str, str]) -> Tuple[str, str, Any, Dict[str, Any]]:
    """What registry.resolve takes: the endpoint, and a BedrockAuth as the key (see ``resolve_bedrock``)."""
    endpoint, auth = resolve_bedrock(base_url, api_key, environ)
    return row.name, endpoint, auth, {}


#: Amazon Bedrock's host
HOST = Host("aws", _authorise, "https://bedrock-runtime.{region}.amazonaws.com", (BEARER_ENV, "AWS_ACCESS_KEY_ID"),
            ENDPOINT_ENVS[0], url=_url, configure=_configure, takes_token_callable=True, check_headers=_check_headers)
