"""A small AWS event-stream encoder for tests (the library only decodes), and Bedrock frame builders.

Written from the format (see agenthub/eventstream.py); its output is checked against botocore's
decoder in tests/test_eventstream.py, so the frames the Bedrock tests use are frames botocore reads.
"""

import json
import struct
import zlib

BOOL_TRUE, BOOL_FALSE, BYTE, SHORT, INTEGER, LONG, BYTES, STRING, TIMESTAMP, UUID = range(10)
_FIXED = {BYTE: ">b", SHORT: ">h", INTEGER: ">i", LONG: ">q", TIMESTAMP: ">q"}


def header(name, kind, value=None):
    raw = name.encode("utf-8")
    out = struct.pack(">B", len(raw)) + raw + struct.pack(">B", kind)
    if kind in (BOOL_TRUE, BOOL_FALSE):
        return out
    if kind in _FIXED:
        return out + struct.pack(_FIXED[kind], value)
    if kind in (BYTES, STRING):
        data = value.encode("utf-8") if isinstance(value, str) else value
        return out + struct.pack(">H", len(data)) + data
    if kind == UUID:
        assert len(value) == 16
        return out + value
    raise ValueError(kind)


def encode(headers, payload=b""):
    """headers: [(name, kind, value)] (or already encoded header bytes); payload: bytes -> one message."""
    raw = b"".join(h if isinstance(h, bytes) else header(*h) for h in headers)
    total = 12 + len(raw) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def event(event_type, payload):
    """A Bedrock event message (``:message-type event``) with a JSON payload."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
    return encode([(":event-type", STRING, event_type), (":content-type", STRING, "application/json"),
                   (":message-type", STRING, "event")], data)


def exception(exception_type, message, **extra):
    """An exception message (``:message-type exception``), as Bedrock sends modeled stream errors."""
    body = dict(extra, message=message)
    return encode([(":exception-type", STRING, exception_type), (":content-type", STRING, "application/json"),
                   (":message-type", STRING, "exception")], json.dumps(body).encode("utf-8"))


def error(code, message):
    """An error message (``:message-type error``): code and message in headers, no payload."""
    return encode([(":error-code", STRING, code), (":error-message", STRING, message),
                   (":message-type", STRING, "error")])


def corrupt(frame, where="message"):
    """``frame`` with one CRC broken: ``prelude`` flips a bit of the prelude CRC, ``message`` of the message CRC,
    ``payload`` a bit of the payload (so the message CRC no longer matches)."""
    data = bytearray(frame)
    if where == "prelude":
        data[8] ^= 0x01
    elif where == "message":
        data[-1] ^= 0x01
    else:
        data[-5] ^= 0x01
    return bytes(data)


# -- Converse stream events ------------------------------------------------------------------------


def message_start(role="assistant"):
    return event("messageStart", {"role": role})


def text_delta(text, index=0):
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}})


def tool_start(tool_use_id, name, index):
    return event("contentBlockStart", {"contentBlockIndex": index,
                                       "start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}})


def tool_delta(fragment, index):
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}})


def reasoning_delta(index, text=None, signature=None, redacted=None):
    delta = {}
    if text is not None:
        delta["text"] = text
    if signature is not None:
        delta["signature"] = signature
    if redacted is not None:
        import base64

        delta["redactedContent"] = base64.b64encode(redacted).decode("ascii")
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": delta}})


def block_stop(index):
    return event("contentBlockStop", {"contentBlockIndex": index})


def message_stop(reason="end_turn", **extra):
    body = {"stopReason": reason}
    body.update(extra)
    return event("messageStop", body)


def metadata(input_tokens=10, output_tokens=5, total=None, cache_read=None, cache_write=None, latency=123):
    usage = {"inputTokens": input_tokens, "outputTokens": output_tokens}
    if cache_read is not None:
        usage["cacheReadInputTokens"] = cache_read
    if cache_write is not None:
        usage["cacheWriteInputTokens"] = cache_write
    usage["totalTokens"] = total if total is not None else (
        input_tokens + output_tokens + (cache_read or 0) + (cache_write or 0))
    return event("metadata", {"usage": usage, "metrics": {"latencyMs": latency}})


def text_stream(*pieces, reason="end_turn", **usage):
    """A whole text answer."""
    frames = [message_start()]
    frames += [text_delta(piece) for piece in pieces]
    frames += [block_stop(0), message_stop(reason), metadata(**usage)]
    return frames


# -- SigV4, checked with botocore ------------------------------------------------------------------


def botocore_sign(method, url, headers, body, access_key, secret_key, token, region, stamp, service="bedrock"):
    """The headers botocore's SigV4Auth gives this request at the time ``stamp`` (YYYYMMDDTHHMMSSZ)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    signer = SigV4Auth(Credentials(access_key, secret_key, token), service, region)
    # add_auth() without its clock: the same steps with the timestamp fixed
    request.context["timestamp"] = stamp
    signer._modify_request_before_signing(request)
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    signer._inject_signature_to_request(request, signature)
    return dict(request.headers.items())


def verify_sigv4(method, url, headers, body, secret_key, service="bedrock"):
    """Check a received request's SigV4 signature with botocore -> (ok, access_key, region).

    ``headers`` as received; only those named in SignedHeaders are given to botocore, which recomputes
    the signature for the request's own X-Amz-Date.
    """
    import re

    lower = {k.lower(): v for k, v in headers.items()}
    auth = lower.get("authorization", "")
    match = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                     r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$", auth)
    if not match:
        return False, None, None
    access_key, day, region, signed_service, names, signature = match.groups()
    if signed_service != service or not lower.get("x-amz-date", "").startswith(day):
        return False, access_key, region
    signed = {name: lower[name] for name in names.split(";") if name in lower}
    if len(signed) != len(names.split(";")):
        return False, access_key, region
    token = signed.pop("x-amz-security-token", None)
    signed.pop("x-amz-date", None)
    again = botocore_sign(method, url, signed, body, access_key, secret_key, token, region, lower["x-amz-date"],
                          service)
    return again["Authorization"] == auth, access_key, region
