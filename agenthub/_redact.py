"""What counts as a secret in headers and URLs, in one place (pure: no I/O).

Every request header is secret except the few that describe the exchange itself
(``PUBLIC_HEADERS``): the key headers of every provider, a gateway's own
(``Helicone-Auth``, ``X-Auth``, ``cf-aig-authorization``, ...), cookies and
whatever a caller added through ``default_headers`` or ``extra_headers``.  Their
values are replaced by ``***`` in error messages, logs, traces and recordings.
``user:password@`` in a URL is shown as ``***@``.

In a JSON body the caller wrote (``extra_body``), a field named like a credential (``is_secret_name``:
``api_key``, ``apiKey``, ``key``, ``token``, ``access_token``, ``x_secret``, ``password``, ``auth``,
``authorization``, ``credentials``, ``cookie``, ...; not ``max_tokens`` nor ``prompt_cache_key``) holds a
secret: every string under it, at any depth.  Traces show them as ``***``; recordings and errors scrub
their values (``named_secrets``) as they scrub a header's.
"""

import re
from typing import Any, Iterable, List, Mapping, Optional
from urllib.parse import urlsplit, urlunsplit
from ._jsondepth import loads as _json_loads

__all__ = ["PUBLIC_HEADERS", "is_public_header", "secret_values", "redact_headers", "redact_url", "url_secrets",
           "scrub_text", "scrub_cut", "CUT_MARKER", "body_secrets", "redact_mcp_servers", "url_query_secrets",
           "redact_url_query", "query_values_hidden",
           "SECRET_ENV_NAME", "env_secrets", "scrub_free_text", "text_secrets", "shown_url",
           "request_url_secrets", "is_secret_name", "named_secrets", "redact_named"]

#: request headers whose values are not credentials (all others are treated as secret)
PUBLIC_HEADERS = frozenset((
    "accept", "accept-encoding", "accept-language", "cache-control", "connection", "content-length",
    "content-type", "content-encoding", "expect", "host", "te", "transfer-encoding", "user-agent",
    "anthropic-version", "anthropic-beta", "openai-beta",
    "x-amz-date", "x-amz-content-sha256",  # (SigV4's request time and body hash)
))
#: shorter pieces are not scrubbed on their own (they would blank out ordinary words)
MIN_SECRET = 8
_PIECES = re.compile(r"[\s;,]+")
#: a SigV4 Authorization value: its access key id and its signature are what it holds of the credential (its scope's
#: date, region, service and "aws4_request", and the names of the signed headers, are words an answer may hold too)
_SIGV4 = re.compile(r"AWS4-HMAC-SHA256\s+Credential=([^/,\s]+)/[^,]*(?:,\s*SignedHeaders=[^,]*)?,\s*Signature=(\S+)\s*\Z")


def is_public_header(name: Any) -> bool:
    return isinstance(name, str) and name.strip().lower() in PUBLIC_HEADERS


def _text(value: Any) -> Optional[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return None


def secret_values(headers: Optional[Mapping[Any, Any]], extra: Iterable[Any] = ()) -> List[str]:
    """The strings to scrub for ``headers`` (every value but the public headers') and ``extra``
    (values that are secret whatever their header, e.g. the caller's own headers): each value
    whole, and its pieces (``Bearer <key>``, ``a=<x>; b=<y>``, ``Credential=<id>/...``)."""
    found = []  # type: List[str]
    values = [v for k, v in dict(headers or {}).items() if not is_public_header(k)] + list(extra)
    for value in values:
        text = _text(value)
        if not text:
            continue
        found.append(text)
        sigv4 = _SIGV4.match(text.strip())
        if sigv4:
            found.extend(sigv4.groups())
            continue
        for piece in _PIECES.split(text):
            found.append(piece)
            if "=" in piece:
                found.append(piece.split("=", 1)[1])
                found.extend(piece.split("=", 1)[1].split("/"))
    unique = {s.strip() for s in found if isinstance(s, str) and len(s.strip()) >= MIN_SECRET}
    return sorted(unique, key=len, reverse=True)  # longest first: a key inside a header value goes whole


def redact_headers(headers: Optional[Mapping[Any, Any]], caller: Iterable[str] = ()) -> dict:
    """A copy of ``headers`` safe to show: every value but the public headers' is ``***``
    (and so is that of every header named in ``caller``, the ones the caller supplied)."""
    mine = {str(name).lower() for name in caller}
    return {k: (v if is_public_header(k) and str(k).lower() not in mine else "***") for k, v in dict(headers or {}).items()}


def url_secrets(url: Any) -> List[str]:
    """The user and password of ``user:password@`` in ``url`` (to scrub), if any."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
    except ValueError:
        return []
    if parts is None or "@" not in parts.netloc:
        return []
    from base64 import b64encode
    from urllib.parse import unquote

    userinfo = parts.netloc.rsplit("@", 1)[0]
    # as written, and decoded (``p%40ss`` is sent as ``p@ss``: a server may echo the password it decoded)
    pieces = [userinfo] + userinfo.split(":", 1) + [unquote(piece) for piece in userinfo.split(":", 1)]
    # requests sends them as ``Authorization: Basic base64(user:password)`` (unquoted, latin-1): a server
    # that echoes that header echoes the credential in this spelling too
    for raw in {userinfo, unquote(userinfo)}:
        if ":" not in raw:
            raw += ":"
        for codec in ("latin-1", "utf-8"):
            try:
                pieces.append(b64encode(raw.encode(codec)).decode("ascii"))
            except UnicodeEncodeError:
                pass
    return sorted({p for p in pieces if len(p) >= MIN_SECRET}, key=len, reverse=True)


def redact_url(url: Any) -> Any:
    """``url`` with ``user:password@`` shown as ``***@``."""
    if not isinstance(url, str) or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"//[^/@]*@", "//***@", url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, "***@" + parts.netloc.rsplit("@", 1)[1], parts.path, parts.query,
                       parts.fragment))


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***``, and what a cut left of one (``scrub_cut``)."""
    secrets = list(secrets)
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "***")
    return scrub_cut(text, secrets) if CUT_MARKER in text else text


#: what ``errors.preview`` writes where it cut a text short (its head before it, its tail after it)
CUT_MARKER = "...[truncated]..."
#: the shortest piece of a secret that a cut left and ``scrub_cut`` replaces (three characters say next to nothing)
MIN_CUT_PIECE = 4


def scrub_cut(text: str, secrets: Iterable[str]) -> str:
    """``text`` with what a cut left of ``secrets`` replaced by ``***``, in a text cut short (it holds
    ``CUT_MARKER``: ``errors.preview`` kept its head and tail, and an error body read up to its cap ends the tail):
    the longest head of a secret (``MIN_CUT_PIECE`` characters or more) that ends the text or the part before a
    marker, and the longest tail of one that starts the part after a marker.  A whole secret is ``scrub_text``'s."""
    values = [s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET]
    if not values or CUT_MARKER not in text:
        return text
    parts = text.split(CUT_MARKER)
    for n, part in enumerate(parts):
        if n:  # after a marker: a secret's tail may start it
            tail = max([_tail_of(secret, part) for secret in values])
            part = "***" + part[tail:] if tail else part
        head = max([_head_of(secret, part) for secret in values])
        parts[n] = part[:len(part) - head] + "***" if head else part
    return CUT_MARKER.join(parts)


def _head_of(secret: str, text: str) -> int:
    """The length of the longest proper head of ``secret`` (``MIN_CUT_PIECE`` characters or more) ending ``text``."""
    lead = secret[:MIN_CUT_PIECE]
    at = text.find(lead, max(0, len(text) - len(secret) + 1))  # (each place the head may begin: its first characters)
    while at != -1:
        if secret.startswith(text[at:]):
            return len(text) - at
        at = text.find(lead, at + 1)
    return 0


def _tail_of(secret: str, text: str) -> int:
    """The length of the longest proper tail of ``secret`` (``MIN_CUT_PIECE`` characters or more) starting ``text``."""
    lead = text[:MIN_CUT_PIECE]
    if len(lead) < MIN_CUT_PIECE:
        return 0
    at = secret.find(lead, 1)
    while at != -1:
        if text.startswith(secret[at:]):
            return len(secret) - at
        at = secret.find(lead, at + 1)
    return 0


def url_query_secrets(url: Any) -> List[str]:
    """The credentials a URL carries: its query's values (a hosted MCP server's ``?token=``, a gateway's
    ``?key=``) and its ``user:password@``: each to scrub, as a header's value is."""
    if not isinstance(url, str):
        return []
    try:
        query = urlsplit(url).query
    except ValueError:
        return []
    from urllib.parse import parse_qsl

    values = [value for _, value in parse_qsl(query, keep_blank_values=True)]
    values.extend(piece.split("=", 1)[1] for piece in query.split("&") if "=" in piece)  # (as sent: encoded)
    return sorted(set(secret_values(None, values)) | set(url_secrets(url)), key=len, reverse=True)


def request_url_secrets(url: Any) -> List[str]:
    """The credentials a request's URL carries: its ``user:password@`` and the values of its query parameters
    named like one (``key=``, ``token=``, ``sig=``, ...; not an ``api-version=`` the host added)."""
    found = url_secrets(url)
    if isinstance(url, str) and "=" in url:
        found += [s for s in text_secrets(url) if len(s) >= MIN_SECRET]
    return sorted(set(found), key=len, reverse=True)


def redact_url_query(url: Any) -> Any:
    """``url`` safe to show: ``user:password@`` as ``***@`` and every query value as ``***``."""
    url = redact_url(url)
    if not isinstance(url, str) or "?" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("?", 1)[0] + "?***"
    query = "&".join(piece.split("=", 1)[0] + ("=***" if "=" in piece else "") for piece in parts.query.split("&"))
    # the query replaced in the string as written (urlunsplit would turn sqlite:////abs/x.db into sqlite://abs/x.db,
    # a host): urlsplit takes the fragment at the first "#", then the query at the first "?" before it
    base, hash_sign, fragment = url.partition("#")
    if "?" not in base:
        return url  # (a "?" in the fragment alone: no query)
    return base.partition("?")[0] + "?" + query + hash_sign + fragment


#: a query parameter's ``name=`` and its value, in free text (a log line quoting a request's path)
_QUERY_VALUE = re.compile(r"([?&][^=&?\s\"'#]*=)[^&\s\"'#]+")


def query_values_hidden(text: str) -> str:
    """``text`` (a log line quoting a URL or a request's path) with every query value as ``***``, as
    ``redact_url_query`` shows a URL; ``text`` itself when it holds none."""
    if "=" not in text:
        return text
    shown = _QUERY_VALUE.sub(r"\1***", text)
    return text if shown == text else shown


#: what may be a ``user:password@`` in a string that is not a well-formed URL (``https:/u:p@h``, ``htps://...``)
_LOOSE_USERINFO = re.compile(r"[^/@\s]*@")


def shown_url(url: Any) -> Any:
    """A URL the caller gave (a base URL, a job row's) as an error or a repr may show it: ``user:password@``
    as ``***@`` and every query value as ``***``; in a string that does not parse as a URL (the very reason
    an error names it), whatever stands before an ``@`` too."""
    shown = redact_url_query(url)
    if not isinstance(shown, str) or "@" not in shown:
        return shown
    try:
        if urlsplit(shown).netloc:
            return shown  # (an authority: its userinfo, if any, is *** already)
    except ValueError:
        pass
    head, sep, tail = shown.partition("?")
    return _LOOSE_USERINFO.sub("***@", head) + sep + tail


def body_secrets(body: Any) -> List[str]:
    """The credentials a request body carries for the MCP servers a provider connects to (config["mcp_servers"]):
    the header values of OpenAI Responses' ``mcp`` tools (and their ``authorization``), the
    ``authorization_token`` of Anthropic's ``mcp_servers``.  ``body``: the planned dict, or its JSON bytes."""
    if isinstance(body, (bytes, bytearray, str)):
        if b'"mcp' not in (body if isinstance(body, (bytes, bytearray)) else body.encode("utf-8", "replace")):
            return []
        import json

        try:
            body = _json_loads(body)
        except ValueError:
            return []
    if not isinstance(body, Mapping):
        return []
    found = []  # type: List[Any]
    urls = []  # type: List[Any]  # (a token in a server URL's query, as hosted MCP servers hand them out)
    for tool in body.get("tools") or ():
        if isinstance(tool, Mapping) and tool.get("type") == "mcp":
            headers = tool.get("headers")
            found.extend(headers.values() if isinstance(headers, Mapping) else ())
            found.append(tool.get("authorization"))
            urls.append(tool.get("server_url"))
    for server in body.get("mcp_servers") or ():
        if isinstance(server, Mapping):
            found.append(server.get("authorization_token"))
            urls.append(server.get("url"))
    return sorted(set(secret_values(None, [value for value in found if isinstance(value, str)]))
                  | {secret for url in urls for secret in url_query_secrets(url)}, key=len, reverse=True)


def redact_mcp_servers(servers: Any) -> Any:
    """config["mcp_servers"] safe to show (a trace): every header value ``***``, the URL's query values and
    ``user:password@`` too."""
    if not isinstance(servers, (list, tuple)):
        return servers
    shown = [dict(server, headers={name: "***" for name in server["headers"]})
             if isinstance(server, Mapping) and isinstance(server.get("headers"), Mapping) else server
             for server in servers]
    return [dict(server, url=redact_url_query(server["url"]))
            if isinstance(server, Mapping) and isinstance(server.get("url"), str) else server for server in shown]


#: an environment variable whose value is a secret by its name (``OPENAI_API_KEY``, ``GITHUB_PAT``,
#: ``DB_PASSWORD``, ``AWS_SESSION_TOKEN``, ``GOOGLE_APPLICATION_CREDENTIALS``, ``SLACK_BOT_AUTH``, ...)
SECRET_ENV_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|_PAT|AUTH|CREDENTIALS?|COOKIE)$")
#: a value that carries a credential whatever its name: a URL with ``user:password@`` (``DATABASE_URL``,
#: ``AGENTHUB_STORE=redis://:pw@...``) or a token query parameter
_URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/\s@]*)@")
_QUERY_TOKEN = re.compile(r"[?&;]((?:[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth|"
                          r"credential|session)[A-Za-z0-9_.-]*))=([^&#\s\"'<>]+)", re.IGNORECASE)


def env_secrets(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The values of the environment (``os.environ`` unless given) that are secrets: those of variables named
    like a secret (SECRET_ENV_NAME), and the credentials inside any value (URL ``user:password@``, token
    query parameters); each at least MIN_SECRET characters, longest first."""
    if environ is None:
        import os

        environ = os.environ
    found = []  # type: List[str]
    for name, value in environ.items():
        if not isinstance(value, str):
            continue
        if SECRET_ENV_NAME.search(name.upper()):
            found.append(value)
        if "@" in value or "=" in value:
            found.extend(text_secrets(value))
    unique = {s for s in found if len(s) >= MIN_SECRET}
    return sorted(unique, key=len, reverse=True)


def text_secrets(text: str) -> List[str]:
    """The credentials written into ``text`` itself: the password (and user:password) of each
    ``scheme://user:password@`` and each token query parameter's value."""
    found = []  # type: List[str]
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group(1)
        found.append(userinfo)
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    for match in _QUERY_TOKEN.finditer(text):
        found.append(match.group(2))
    return [s for s in found if s]


def scrub_free_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` (an exception's message, a tool's error) safe to show or send: each of ``secrets`` (a
    client's credential values, say), the environment's secrets (env_secrets) and the credentials written
    in the text itself (a URL's ``user:password@``, a token query parameter) replaced by ``***``."""
    values = [s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET]
    values += env_secrets()
    if "@" in text or "=" in text:
        values += [s for s in text_secrets(text) if len(s) >= 3]  # a URL's own password, however short
    return scrub_text(text, sorted(set(values), key=len, reverse=True))


#: the words of a field name that make its value a credential (``x_secret``, ``access_token``, ``authorization``)
_SECRET_WORDS = frozenset(("token", "secret", "secrets", "password", "passwd", "pwd", "passphrase", "authorization",
                           "auth", "credential", "credentials", "cookie", "cookies", "apikey", "bearer", "jwt"))
#: what, before ``key``, makes a key a credential (``api_key``, ``secret_key``); ``key`` alone is one too, but not
#: ``prompt_cache_key`` or ``idempotency_key``
_KEY_KINDS = frozenset(("api", "access", "secret", "private", "auth", "subscription", "client", "signing", "master",
                        "license", "account", "app", "session", "service", "x"))
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_secret_name(name: Any) -> bool:
    """A JSON field named like a credential: a word of it (split at ``_``, ``-``, ``.``, spaces and camelCase)
    is ``token``, ``secret``, ``password``, ``auth``, ``authorization``, ``credential(s)``, ``cookie``,
    ``apikey``, ...; or it is ``key`` (or ``keys``), alone or after ``api``, ``access``, ``secret``,
    ``private``, ``client``, ``session``, ...  (``max_tokens``, ``prompt_cache_key`` are not)."""
    if not isinstance(name, str):
        return False
    words = [word.lower() for word in _WORDS.findall(name)]
    if not words:
        return False
    if any(word in _SECRET_WORDS for word in words):
        return True
    if words[-1] in ("key", "keys"):
        return len(words) == 1 or words[-2] in _KEY_KINDS
    return False


def _named(value: Any, secret: bool, found: List[str], depth: int = 0) -> None:
    if depth > 64:  # (extra_body is checked to be bounded JSON; a deeper one is not walked further)
        return
    if isinstance(value, str):
        if secret:
            found.append(value)
    elif isinstance(value, Mapping):
        for name, item in value.items():
            _named(item, secret or is_secret_name(name), found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _named(item, secret, found, depth + 1)


def named_secrets(value: Any) -> List[str]:
    """The strings of ``value`` (JSON-like: the caller's ``extra_body``) under a field named like a credential
    (``is_secret_name``), at any depth, each at least MIN_SECRET characters, longest first: to scrub, as a
    header's value is."""
    found = []  # type: List[str]
    _named(value, False, found)
    return sorted({s for s in found if len(s) >= MIN_SECRET}, key=lambda s: (-len(s), s))


def redact_named(value: Any, secret: bool = False) -> Any:
    """``value`` (JSON-like) safe to show: every string under a field named like a credential is ``***``,
    whatever its length."""
    if isinstance(value, str):
        return "***" if secret else value
    if isinstance(value, Mapping):
        return {name: redact_named(item, secret or is_secret_name(name)) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_named(item, secret) for item in value]
    return value
