"""Each message part on each wire: the body a local server records holds it faithfully, or the call is refused
with a typed error before anything is sent, the same way on every provider.

One table: ``EXPECT[(wire, case)]`` is the exact part of the recorded body the case is about (the turns after the
first user message), or the exact error.  The cases are the ones a wire got wrong:

- a user message holding tool results and other parts (text, an image by URL, a result's linked image; or a user
  message of text between the call and the message of its results, taken as one message with it): Gemini
  takes the turn right after a function call turn as its responses, one per call (a text or an image between
  them splits that turn: "the number of function response parts is equal to the number of function call
  parts", a 400), so there the responses come first, all in one content, the other parts after them in their
  order (as Anthropic, Bedrock and Chat Completions send them; the Responses API's input items keep the order);
- a text that is white space alone (a model's "\n\n" before its tool calls, a blank tool output): Claude's wires
  refuse such a text block ("text content blocks must contain non-whitespace text", a 400), so Anthropic and
  Bedrock leave it out as they leave out an empty text (a blank tool output: Anthropic's tool_result has no
  content, Bedrock's, which must have some, is the text "(no output)"); the other wires take it as it is;
- an empty text: Gemini refuses an empty text part ("it has an empty text parameter", a 400), so it sends none (on
  generateContent as on Interactions), as Anthropic and Bedrock send none; where nothing is left to send, the four
  raise a ConfigError before sending (the
  API's 400 otherwise);
- an item carrying Anthropic's ``cache_control`` (no wire reads it from an item: the breakpoint was lost unseen)
  is a ConfigError naming agenthub's mark, ``cache_breakpoint``;
- an image type Claude does not take (its four: JPEG, PNG, GIF, WebP) is an error before sending on Anthropic as on
  Bedrock, as one Gemini does not take (PNG, JPEG, WebP, HEIC, HEIF) is on Gemini, one outside the Interactions
  API's enum (those, GIF, BMP, TIFF) is on Interactions, and one OpenAI does not (PNG,
  JPEG, WebP, GIF) at the hosts that run OpenAI's models (the local server here is not checked: see
  test_an_image_type_the_host_does_not_take_is_refused_before_sending); ``image/jpg`` (a common misspelling) goes
  as the ``image/jpeg`` it means on every wire that is given the bytes (Anthropic sent it as it was: a 400);
- an ``image_url`` that is not an image (a PDF or audio data URI, a PDF's URL) goes as the same bytes given as
  ``inline_data`` go, or as the wire's document by URL; where the wire takes no such thing, a typed error
  (Chat Completions and Responses sent a PDF as an image, a 400; the Interactions API typed a PDF's URL image).

And the round trip over the recordings in ../shared/wire: a recorded Responses or Chat Completions answer, collected
through the client, goes back in the next request as the provider sent it (reasoning items with their encrypted
content and summaries, phases, call ids, the reasoning field it came in); Anthropic's and Gemini's recordings are
checked so in test_anthropic.py and test_gemini.py.
"""

import base64
import json
import logging

import pytest

from agenthub import AutoLLMClient, collect
from agenthub.errors import AgentHubError, ConfigError, UnsupportedParameterError
from bedrock_server import BedrockServer
from conftest import wire_params
from sse_server import Answer, SSEServer
from test_bedrock_servers import aws_env  # noqa: F401  (the AWS credentials of the local Bedrock)

PDF = b"%PDF-1.4 fake"
PDF_B64 = base64.b64encode(PDF).decode("ascii")
PDF_URI = "data:application/pdf;base64," + PDF_B64
WAV = b"RIFF....WAVEfmt "
WAV_B64 = base64.b64encode(WAV).decode("ascii")
WAV_URI = "data:audio/wav;base64," + WAV_B64
PNG_URL = "https://files.example/chart.png"
PDF_URL = "https://files.example/report.pdf"

ASK = {"role": "user", "content_items": [{"type": "text", "text": "q"}]}
CALLS = {"role": "assistant", "content_items": [
    {"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "c1"},
    {"type": "tool_call", "name": "g", "arguments": {}, "tool_call_id": "c2"}]}
CONFIG = {"tools": [{"name": "f"}, {"name": "g"}]}


def _result(call_id, text, **extra):
    return dict({"type": "tool_result", "tool_call_id": call_id, "text": text}, **extra)


def _user(*items):
    return {"role": "user", "content_items": list(items)}


CASES = {
    "results, the first with a linked image": [ASK, CALLS, _user(
        _result("c1", "r1", images=[PNG_URL]), _result("c2", "r2"))],
    "text before the results": [ASK, CALLS, _user(
        {"type": "text", "text": "mind"}, _result("c1", "r1"), _result("c2", "r2"))],
    "text between the results": [ASK, CALLS, _user(
        _result("c1", "r1"), {"type": "text", "text": "mind"}, _result("c2", "r2"))],
    "a text message before the results' message": [ASK, CALLS, _user({"type": "text", "text": "mind"}),
                                                   _user(_result("c1", "r1"), _result("c2", "r2"))],
    "a PDF data URI as image_url": [_user({"type": "text", "text": "q"}, {"type": "image_url", "image_url": PDF_URI})],
    "a PDF's URL as image_url": [_user({"type": "text", "text": "q"}, {"type": "image_url", "image_url": PDF_URL})],
    "an audio data URI as image_url": [_user({"type": "text", "text": "q"},
                                             {"type": "image_url", "image_url": WAV_URI})],
    "a PDF data URI in a tool result": [ASK, CALLS, _user(
        _result("c1", "r1", images=[PDF_URI]), _result("c2", "r2"))],
    "white space alone as text": [ASK, {"role": "assistant", "content_items": [
        {"type": "text", "text": "\n\n"}] + CALLS["content_items"]}, _user(
        _result("c1", " "), _result("c2", "r2"), {"type": "text", "text": "\t"})],
    "an empty text beside an image": [ASK, {"role": "assistant", "content_items": [{"type": "text", "text": "ok"}]},
                                      _user({"type": "text", "text": ""},
                                            {"type": "inline_data", "data": b"\x89PNG", "mime_type": "image/png"})],
    "nothing but an empty text": [_user({"type": "text", "text": ""})],
    "a JPEG typed image/jpg": [_user({"type": "text", "text": "q"},
                                     {"type": "inline_data", "data": b"\xff\xd8\xff", "mime_type": "image/jpg"})],
    "an SVG image": [_user({"type": "text", "text": "q"},
                           {"type": "inline_data", "data": b"<svg/>", "mime_type": "image/svg+xml"})],
    "Anthropic's cache_control on an item": [_user({"type": "text", "text": "q",
                                                    "cache_control": {"type": "ephemeral"}})],
    "two assistant messages in a row": [ASK, {"role": "assistant", "content_items": [
        {"type": "text", "text": "let me see"}]}, CALLS, _user(_result("c1", "r1"), _result("c2", "r2"))],
    "an assistant message first": [CALLS, _user(_result("c1", "r1"), _result("c2", "r2"))],
    "images in an assistant turn": [ASK, {"role": "assistant", "content_items": [
        {"type": "text", "text": "here"}, {"type": "inline_data", "data": b"\x89PNG", "mime_type": "image/png"},
        {"type": "image_url", "image_url": PNG_URL}]}, _user({"type": "text", "text": "nice"})],
}

WIRES = ("openai-chat", "openai-responses", "anthropic", "gemini", "gemini-interactions", "bedrock")
MODELS = {"openai-chat": "gpt-5.5", "openai-responses": "gpt-5.5", "anthropic": "claude-sonnet-4-5",
          "gemini": "gemini-3.5-flash", "gemini-interactions": "gemini-3.5-flash",
          "bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}


def _after_ask(items):
    return items[1:] if items and items[0] in FIRST_ASK else items


FIRST_ASK = ({"role": "user", "content": "q"},  # (the first user message, the same in every case: left out)
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
             {"role": "user", "content": [{"type": "text", "text": "q"}]},
             {"role": "user", "parts": [{"text": "q"}]},
             {"type": "user_input", "content": [{"type": "text", "text": "q"}]},
             {"role": "user", "content": [{"text": "q"}]})

EXTRACT = {
    "openai-chat": lambda body: _after_ask(body["messages"]),
    "openai-responses": lambda body: _after_ask(body["input"]),
    "anthropic": lambda body: _after_ask(body["messages"]),
    "gemini": lambda body: _after_ask(body["contents"]),
    "gemini-interactions": lambda body: _after_ask(body["input"]),
    "bedrock": lambda body: _after_ask(body["messages"]),
}


def plan_client(wire, base_url="http://127.0.0.1:9"):
    if wire == "bedrock":
        return AutoLLMClient(MODELS[wire], client_type="bedrock", max_retries=0)
    return AutoLLMClient(MODELS[wire], client_type=wire, api_key="k", max_retries=0,
                         base_url=base_url + ("/v1" if wire.startswith("openai") else ""))

NOT_CACHE_CONTROL = (ConfigError, "messages[0]['content_items'][0] has 'cache_control', Anthropic's wire field, which "
                                  "is not read here: agenthub's prompt-cache breakpoint is \"cache_breakpoint\": True "
                                  "on the item (or the message), sent on every wire that takes one")


CALLED = {  # the assistant turn of CALLS as each wire sends it
    'openai-chat':
        [{'role': 'assistant',
          'content': None,
          'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{"a":1}'}},
                         {'id': 'c2', 'type': 'function', 'function': {'name': 'g', 'arguments': '{}'}}]}],
    'openai-responses':
        [{'type': 'function_call', 'call_id': 'c1', 'name': 'f', 'arguments': '{"a":1}'},
         {'type': 'function_call', 'call_id': 'c2', 'name': 'g', 'arguments': '{}'}],
    'anthropic':
        [{'role': 'assistant',
          'content': [{'type': 'tool_use', 'id': 'c1', 'name': 'f', 'input': {'a': 1}},
                      {'type': 'tool_use', 'id': 'c2', 'name': 'g', 'input': {}}]}],
    'gemini':
        [{'role': 'model',
          'parts': [{'functionCall': {'id': 'c1', 'name': 'f', 'args': {'a': 1}},
                     'thoughtSignature': 'skip_thought_signature_validator'},
                    {'functionCall': {'id': 'c2', 'name': 'g', 'args': {}}}]}],
    'gemini-interactions':
        [{'type': 'thought', 'signature': 'skip_thought_signature_validator'},
         {'type': 'function_call', 'id': 'c1', 'name': 'f', 'arguments': {'a': 1}},
         {'type': 'function_call', 'id': 'c2', 'name': 'g', 'arguments': {}}],
    'bedrock':
        [{'role': 'assistant',
          'content': [{'toolUse': {'toolUseId': 'c1', 'name': 'f', 'input': {'a': 1}}},
                      {'toolUse': {'toolUseId': 'c2', 'name': 'g', 'input': {}}}]}],
}


EXPECT = {
    # -- results, the first with a linked image
    ('openai-chat', 'results, the first with a linked image'):
        [*CALLED['openai-chat'],
         {'role': 'tool', 'tool_call_id': 'c1', 'content': 'r1'},
         {'role': 'tool', 'tool_call_id': 'c2', 'content': 'r2'},
         {'role': 'user',
          'content': [{'type': 'image_url', 'image_url': {'url': PNG_URL}}]}],
    ('openai-responses', 'results, the first with a linked image'):
        [*CALLED['openai-responses'],
         {'type': 'function_call_output',
          'call_id': 'c1',
          'output': [{'type': 'input_text', 'text': 'r1'},
                     {'type': 'input_image', 'image_url': PNG_URL, 'detail': 'auto'}]},
         {'type': 'function_call_output', 'call_id': 'c2', 'output': 'r2'}],
    ('anthropic', 'results, the first with a linked image'):
        [*CALLED['anthropic'],
         {'role': 'user',
          'content': [{'type': 'tool_result',
                       'tool_use_id': 'c1',
                       'content': [{'type': 'text', 'text': 'r1'},
                                   {'type': 'image',
                                    'source': {'type': 'url', 'url': PNG_URL}}]},
                      {'type': 'tool_result', 'tool_use_id': 'c2', 'content': 'r2'}]}],
    ('gemini', 'results, the first with a linked image'):
        [*CALLED['gemini'],
         {'role': 'user',
          'parts': [{'functionResponse': {'name': 'f', 'id': 'c1', 'response': {'result': 'r1'}}},
                    {'functionResponse': {'name': 'g', 'id': 'c2', 'response': {'result': 'r2'}}}]},
         {'role': 'user',
          'parts': [{'fileData': {'mimeType': 'image/png', 'fileUri': PNG_URL}}]}],
    ('gemini-interactions', 'results, the first with a linked image'):
        [*CALLED['gemini-interactions'],
         {'type': 'function_result',
          'call_id': 'c1',
          'name': 'f',
          'result': [{'type': 'text', 'text': 'r1'},
                     {'type': 'image', 'uri': PNG_URL, 'mime_type': 'image/png'}]},
         {'type': 'function_result', 'call_id': 'c2', 'name': 'g', 'result': 'r2'}],
    ('bedrock', 'results, the first with a linked image'):
        (UnsupportedParameterError,
         'bedrock: image_url Bedrock cannot fetch http(s) URLs: send the bytes as inline_data (or a '
         'data: URI, or an s3:// URL)'),
    # -- text before the results
    ('openai-chat', 'text before the results'):
        [*CALLED['openai-chat'],
         {'role': 'tool', 'tool_call_id': 'c1', 'content': 'r1'},
         {'role': 'tool', 'tool_call_id': 'c2', 'content': 'r2'},
         {'role': 'user', 'content': 'mind'}],
    ('openai-responses', 'text before the results'):
        [*CALLED['openai-responses'],
         {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'mind'}]},
         {'type': 'function_call_output', 'call_id': 'c1', 'output': 'r1'},
         {'type': 'function_call_output', 'call_id': 'c2', 'output': 'r2'}],
    ('anthropic', 'text before the results'):
        [*CALLED['anthropic'],
         {'role': 'user',
          'content': [{'type': 'tool_result', 'tool_use_id': 'c1', 'content': 'r1'},
                      {'type': 'tool_result', 'tool_use_id': 'c2', 'content': 'r2'},
                      {'type': 'text', 'text': 'mind'}]}],
    ('gemini', 'text before the results'):
        [*CALLED['gemini'],
         {'role': 'user',
          'parts': [{'functionResponse': {'name': 'f', 'id': 'c1', 'response': {'result': 'r1'}}},
                    {'functionResponse': {'name': 'g', 'id': 'c2', 'response': {'result': 'r2'}}}]},
         {'role': 'user', 'parts': [{'text': 'mind'}]}],
    ('gemini-interactions', 'text before the results'):
        [*CALLED['gemini-interactions'],
         {'type': 'function_result', 'call_id': 'c1', 'name': 'f', 'result': 'r1'},
         {'type': 'function_result', 'call_id': 'c2', 'name': 'g', 'result': 'r2'},
         {'type': 'user_input', 'content': [{'type': 'text', 'text': 'mind'}]}],
    ('bedrock', 'text before the results'):
        [*CALLED['bedrock'],
         {'role': 'user',
          'content': [{'toolResult': {'toolUseId': 'c1', 'content': [{'text': 'r1'}]}},
                      {'toolResult': {'toolUseId': 'c2', 'content': [{'text': 'r2'}]}},
                      {'text': 'mind'},
                      {'cachePoint': {'type': 'default'}}]}],
    # -- text between the results
    ('openai-responses', 'text between the results'):
        [*CALLED['openai-responses'],
         {'type': 'function_call_output', 'call_id': 'c1', 'output': 'r1'},
         {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'mind'}]},
         {'type': 'function_call_output', 'call_id': 'c2', 'output': 'r2'}],
    # -- a PDF data URI as image_url
    ('openai-chat', 'a PDF data URI as image_url'):
        (UnsupportedParameterError,
         'openai-chat: inline_data of type application/pdf cannot be sent over Chat Completions'),
    ('openai-responses', 'a PDF data URI as image_url'):
        [{'type': 'message',
          'role': 'user',
          'content': [{'type': 'input_text', 'text': 'q'},
                      {'type': 'input_file',
                       'filename': 'document.pdf',
                       'file_data': PDF_URI}]}],
    ('anthropic', 'a PDF data URI as image_url'):
        [{'role': 'user',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'document',
                       'source': {'type': 'base64',
                                  'media_type': 'application/pdf',
                                  'data': PDF_B64}}]}],
    ('gemini', 'a PDF data URI as image_url'):
        [{'role': 'user',
          'parts': [{'text': 'q'},
                    {'inlineData': {'mimeType': 'application/pdf', 'data': PDF_B64}}]}],
    ('gemini-interactions', 'a PDF data URI as image_url'):
        [{'type': 'user_input',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'document', 'data': PDF_B64, 'mime_type': 'application/pdf'}]}],
    ('bedrock', 'a PDF data URI as image_url'):
        [{'role': 'user',
          'content': [{'text': 'q'},
                      {'document': {'format': 'pdf',
                                    'name': 'document 1',
                                    'source': {'bytes': PDF_B64}}},
                      {'cachePoint': {'type': 'default'}}]}],
    # -- a PDF's URL as image_url
    ('openai-chat', "a PDF's URL as image_url"):
        (UnsupportedParameterError,
         'openai-chat: image_url names a PDF (a URL ending in .pdf): Chat Completions takes images '
         'by URL, no document'),
    ('openai-responses', "a PDF's URL as image_url"):
        [{'type': 'message',
          'role': 'user',
          'content': [{'type': 'input_text', 'text': 'q'},
                      {'type': 'input_file', 'file_url': PDF_URL}]}],
    ('anthropic', "a PDF's URL as image_url"):
        [{'role': 'user',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'document', 'source': {'type': 'url', 'url': PDF_URL}}]}],
    ('gemini', "a PDF's URL as image_url"):
        [{'role': 'user',
          'parts': [{'text': 'q'},
                    {'fileData': {'mimeType': 'application/pdf', 'fileUri': PDF_URL}}]}],
    ('gemini-interactions', "a PDF's URL as image_url"):
        [{'type': 'user_input',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'document',
                       'uri': PDF_URL,
                       'mime_type': 'application/pdf'}]}],
    ('bedrock', "a PDF's URL as image_url"):
        (UnsupportedParameterError,
         'bedrock: image_url Bedrock cannot fetch http(s) URLs: send the bytes as inline_data (or a '
         'data: URI, or an s3:// URL)'),
    # -- an audio data URI as image_url
    ('openai-chat', 'an audio data URI as image_url'):
        [{'role': 'user',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'input_audio',
                       'input_audio': {'data': WAV_B64, 'format': 'wav'}}]}],
    ('openai-responses', 'an audio data URI as image_url'):
        (UnsupportedParameterError,
         'openai-responses: inline_data of type audio/wav cannot be sent over the Responses API'),
    ('anthropic', 'an audio data URI as image_url'):
        (UnsupportedParameterError,
         'anthropic: inline_data of type audio/wav cannot be sent over the Anthropic Messages API'),
    ('gemini', 'an audio data URI as image_url'):
        [{'role': 'user',
          'parts': [{'text': 'q'}, {'inlineData': {'mimeType': 'audio/wav', 'data': WAV_B64}}]}],
    ('gemini-interactions', 'an audio data URI as image_url'):
        [{'type': 'user_input',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'audio', 'data': WAV_B64, 'mime_type': 'audio/wav'}]}],
    ('bedrock', 'an audio data URI as image_url'):
        (UnsupportedParameterError,
         'bedrock: inline_data of type audio/wav cannot be sent over Bedrock Converse'),
    # -- a PDF data URI in a tool result
    ('openai-chat', 'a PDF data URI in a tool result'):
        (UnsupportedParameterError,
         'openai-chat: inline_data of type application/pdf cannot be sent over Chat Completions'),
    ('openai-responses', 'a PDF data URI in a tool result'):
        [*CALLED['openai-responses'],
         {'type': 'function_call_output',
          'call_id': 'c1',
          'output': [{'type': 'input_text', 'text': 'r1'},
                     {'type': 'input_file',
                      'filename': 'document.pdf',
                      'file_data': PDF_URI}]},
         {'type': 'function_call_output', 'call_id': 'c2', 'output': 'r2'}],
    ('anthropic', 'a PDF data URI in a tool result'):
        [*CALLED['anthropic'],
         {'role': 'user',
          'content': [{'type': 'tool_result',
                       'tool_use_id': 'c1',
                       'content': [{'type': 'text', 'text': 'r1'},
                                   {'type': 'document',
                                    'source': {'type': 'base64',
                                               'media_type': 'application/pdf',
                                               'data': PDF_B64}}]},
                      {'type': 'tool_result', 'tool_use_id': 'c2', 'content': 'r2'}]}],
    ('gemini', 'a PDF data URI in a tool result'):
        [*CALLED['gemini'],
         {'role': 'user',
          'parts': [{'functionResponse': {'name': 'f',
                                          'id': 'c1',
                                          'response': {'result': 'r1'},
                                          'parts': [{'inlineData': {'mimeType': 'application/pdf',
                                                                    'data': PDF_B64}}]}},
                    {'functionResponse': {'name': 'g', 'id': 'c2', 'response': {'result': 'r2'}}}]}],
    ('gemini-interactions', 'a PDF data URI in a tool result'):  # (a function result holds text and images only)
        [*CALLED['gemini-interactions'],
         {'type': 'function_result', 'call_id': 'c1', 'name': 'f', 'result': 'r1'},
         {'type': 'function_result', 'call_id': 'c2', 'name': 'g', 'result': 'r2'},
         {'type': 'user_input', 'content': [{'type': 'document', 'data': PDF_B64, 'mime_type': 'application/pdf'}]}],
    ('bedrock', 'a PDF data URI in a tool result'):
        [*CALLED['bedrock'],
         {'role': 'user',
          'content': [{'toolResult': {'toolUseId': 'c1',
                                      'content': [{'text': 'r1'},
                                                  {'document': {'format': 'pdf',
                                                                'name': 'document 1',
                                                                'source': {'bytes': PDF_B64}}}]}},
                      {'toolResult': {'toolUseId': 'c2', 'content': [{'text': 'r2'}]}},
                      {'cachePoint': {'type': 'default'}}]}],
    # -- white space alone as text
    ('openai-chat', 'white space alone as text'):
        [{'role': 'assistant',
          'content': '\n\n',
          'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{"a":1}'}},
                         {'id': 'c2', 'type': 'function', 'function': {'name': 'g', 'arguments': '{}'}}]},
         {'role': 'tool', 'tool_call_id': 'c1', 'content': ' '},
         {'role': 'tool', 'tool_call_id': 'c2', 'content': 'r2'},
         {'role': 'user', 'content': '\t'}],
    ('openai-responses', 'white space alone as text'):
        [{'type': 'message',
          'role': 'assistant',
          'content': [{'type': 'output_text', 'text': '\n\n', 'annotations': []}]},
         {'type': 'function_call', 'call_id': 'c1', 'name': 'f', 'arguments': '{"a":1}'},
         {'type': 'function_call', 'call_id': 'c2', 'name': 'g', 'arguments': '{}'},
         {'type': 'function_call_output', 'call_id': 'c1', 'output': ' '},
         {'type': 'function_call_output', 'call_id': 'c2', 'output': 'r2'},
         {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': '\t'}]}],
    ('anthropic', 'white space alone as text'):
        [*CALLED['anthropic'],
         {'role': 'user',
          'content': [{'type': 'tool_result', 'tool_use_id': 'c1'},
                      {'type': 'tool_result', 'tool_use_id': 'c2', 'content': 'r2'}]}],
    ('gemini', 'white space alone as text'):
        [{'role': 'model',
          'parts': [{'text': '\n\n'},
                    {'functionCall': {'id': 'c1', 'name': 'f', 'args': {'a': 1}},
                     'thoughtSignature': 'skip_thought_signature_validator'},
                    {'functionCall': {'id': 'c2', 'name': 'g', 'args': {}}}]},
         {'role': 'user',
          'parts': [{'functionResponse': {'name': 'f', 'id': 'c1', 'response': {'result': ' '}}},
                    {'functionResponse': {'name': 'g', 'id': 'c2', 'response': {'result': 'r2'}}}]},
         {'role': 'user', 'parts': [{'text': '\t'}]}],
    ('gemini-interactions', 'white space alone as text'):
        [{'type': 'model_output', 'content': [{'type': 'text', 'text': '\n\n'}]},
         *CALLED['gemini-interactions'],
         {'type': 'function_result', 'call_id': 'c1', 'name': 'f', 'result': ' '},
         {'type': 'function_result', 'call_id': 'c2', 'name': 'g', 'result': 'r2'},
         {'type': 'user_input', 'content': [{'type': 'text', 'text': '\t'}]}],
    ('bedrock', 'white space alone as text'):
        [*CALLED['bedrock'],
         {'role': 'user',
          'content': [{'toolResult': {'toolUseId': 'c1', 'content': [{'text': '(no output)'}]}},
                      {'toolResult': {'toolUseId': 'c2', 'content': [{'text': 'r2'}]}},
                      {'cachePoint': {'type': 'default'}}]}],
    # -- an empty text beside an image
    ('openai-chat', 'an empty text beside an image'):
        [{'role': 'assistant', 'content': 'ok'},
         {'role': 'user',
          'content': [{'type': 'text', 'text': ''},
                      {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,iVBORw=='}}]}],
    ('openai-responses', 'an empty text beside an image'):
        [{'type': 'message',
          'role': 'assistant',
          'content': [{'type': 'output_text', 'text': 'ok', 'annotations': []}]},
         {'type': 'message',
          'role': 'user',
          'content': [{'type': 'input_text', 'text': ''},
                      {'type': 'input_image', 'image_url': 'data:image/png;base64,iVBORw==', 'detail': 'auto'}]}],
    ('anthropic', 'an empty text beside an image'):
        [{'role': 'assistant', 'content': [{'type': 'text', 'text': 'ok'}]},
         {'role': 'user',
          'content': [{'type': 'image',
                       'source': {'type': 'base64', 'media_type': 'image/png', 'data': 'iVBORw=='}}]}],
    ('gemini', 'an empty text beside an image'):
        [{'role': 'model', 'parts': [{'text': 'ok'}]},
         {'role': 'user', 'parts': [{'inlineData': {'mimeType': 'image/png', 'data': 'iVBORw=='}}]}],
    ('gemini-interactions', 'an empty text beside an image'):
        [{'type': 'model_output', 'content': [{'type': 'text', 'text': 'ok'}]},
         {'type': 'user_input', 'content': [{'type': 'image', 'data': 'iVBORw==', 'mime_type': 'image/png'}]}],
    ('bedrock', 'an empty text beside an image'):
        [{'role': 'assistant', 'content': [{'text': 'ok'}]},
         {'role': 'user',
          'content': [{'image': {'format': 'png', 'source': {'bytes': 'iVBORw=='}}},
                      {'cachePoint': {'type': 'default'}}]}],
    # -- nothing but an empty text
    ('openai-chat', 'nothing but an empty text'):
        [{'role': 'user', 'content': ''}],
    ('openai-responses', 'nothing but an empty text'):
        [{'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': ''}]}],
    ('anthropic', 'nothing but an empty text'):
        (ConfigError,
         'anthropic: the messages hold nothing this wire takes (every text in them is empty, or '
         "white space alone on Claude's wires, which it leaves out): nothing was sent"),
    ('gemini', 'nothing but an empty text'):
        (ConfigError,
         'gemini: the messages hold nothing this wire takes (every text in them is empty, or white '
         "space alone on Claude's wires, which it leaves out): nothing was sent"),
    ('gemini-interactions', 'nothing but an empty text'):
        (ConfigError,
         'gemini-interactions: the messages hold nothing this wire takes (every text in them is empty, or white '
         "space alone on Claude's wires, which it leaves out): nothing was sent"),
    ('bedrock', 'nothing but an empty text'):
        (ConfigError,
         'bedrock: the messages hold nothing this wire takes (every text in them is empty, or white '
         "space alone on Claude's wires, which it leaves out): nothing was sent"),
    # -- a JPEG typed image/jpg
    ('openai-chat', 'a JPEG typed image/jpg'):
        [{'role': 'user',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'image_url', 'image_url': {'url': 'data:image/jpeg;base64,/9j/'}}]}],
    ('openai-responses', 'a JPEG typed image/jpg'):
        [{'type': 'message',
          'role': 'user',
          'content': [{'type': 'input_text', 'text': 'q'},
                      {'type': 'input_image', 'image_url': 'data:image/jpeg;base64,/9j/', 'detail': 'auto'}]}],
    ('anthropic', 'a JPEG typed image/jpg'):
        [{'role': 'user',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'image', 'source': {'type': 'base64', 'media_type': 'image/jpeg', 'data': '/9j/'}}]}],
    ('gemini', 'a JPEG typed image/jpg'):
        [{'role': 'user', 'parts': [{'text': 'q'}, {'inlineData': {'mimeType': 'image/jpeg', 'data': '/9j/'}}]}],
    ('gemini-interactions', 'a JPEG typed image/jpg'):
        [{'type': 'user_input',
          'content': [{'type': 'text', 'text': 'q'}, {'type': 'image', 'data': '/9j/', 'mime_type': 'image/jpeg'}]}],
    ('bedrock', 'a JPEG typed image/jpg'):
        [{'role': 'user',
          'content': [{'text': 'q'},
                      {'image': {'format': 'jpeg', 'source': {'bytes': '/9j/'}}},
                      {'cachePoint': {'type': 'default'}}]}],
    # -- an SVG image
    ('openai-chat', 'an SVG image'):
        [{'role': 'user',
          'content': [{'type': 'text', 'text': 'q'},
                      {'type': 'image_url', 'image_url': {'url': 'data:image/svg+xml;base64,PHN2Zy8+'}}]}],
    ('openai-responses', 'an SVG image'):
        [{'type': 'message',
          'role': 'user',
          'content': [{'type': 'input_text', 'text': 'q'},
                      {'type': 'input_image',
                       'image_url': 'data:image/svg+xml;base64,PHN2Zy8+',
                       'detail': 'auto'}]}],
    ('anthropic', 'an SVG image'):
        (UnsupportedParameterError,
         'anthropic: inline_data of type image/svg+xml cannot be sent over the Anthropic Messages '
         'API (its images are JPEG, PNG, GIF or WebP)'),
    ('gemini', 'an SVG image'):
        (UnsupportedParameterError,
         'gemini: inline_data of type image/svg+xml cannot be sent over the Gemini API (its images are PNG, JPEG, '
         'WebP, HEIC or HEIF)'),
    ('gemini-interactions', 'an SVG image'):
        (UnsupportedParameterError,
         'gemini-interactions: inline_data of type image/svg+xml cannot be sent over the Interactions API (its images '
         'are PNG, JPEG, WebP, HEIC, HEIF, GIF, BMP or TIFF)'),
    ('bedrock', 'an SVG image'):
        (UnsupportedParameterError,
         'bedrock: inline_data of type image/svg+xml cannot be sent over Bedrock Converse'),
    # -- Anthropic's cache_control on an item
    ('openai-chat', "Anthropic's cache_control on an item"):
        NOT_CACHE_CONTROL,
    ('openai-responses', "Anthropic's cache_control on an item"):
        NOT_CACHE_CONTROL,
    ('anthropic', "Anthropic's cache_control on an item"):
        NOT_CACHE_CONTROL,
    ('gemini', "Anthropic's cache_control on an item"):
        NOT_CACHE_CONTROL,
    ('gemini-interactions', "Anthropic's cache_control on an item"):
        NOT_CACHE_CONTROL,
    ('bedrock', "Anthropic's cache_control on an item"):
        NOT_CACHE_CONTROL,
    # -- images in an assistant turn: only Gemini's wires take them (Gemini's image models answer with them); the
    # others refuse an image in an assistant message (Anthropic and Bedrock's Claude: "'image' blocks are not
    # permitted within assistant turns"; Chat Completions: "Image URLs are only allowed for messages with role
    # 'user'"; a Responses assistant message holds output_text and refusal alone): left out with a warning
    ('openai-chat', 'images in an assistant turn'):
        [{'role': 'assistant', 'content': 'here'}, {'role': 'user', 'content': 'nice'}],
    ('openai-responses', 'images in an assistant turn'):
        [{'type': 'message', 'role': 'assistant', 'content': [{'type': 'output_text', 'text': 'here',
                                                               'annotations': []}]},
         {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'nice'}]}],
    ('anthropic', 'images in an assistant turn'):
        [{'role': 'assistant', 'content': [{'type': 'text', 'text': 'here'}]},
         {'role': 'user', 'content': [{'type': 'text', 'text': 'nice'}]}],
    ('gemini', 'images in an assistant turn'):
        [{'role': 'model', 'parts': [{'text': 'here'}, {'inlineData': {'mimeType': 'image/png', 'data': 'iVBORw=='}},
                                     {'fileData': {'mimeType': 'image/png', 'fileUri': PNG_URL}}]},
         {'role': 'user', 'parts': [{'text': 'nice'}]}],
    ('gemini-interactions', 'images in an assistant turn'):
        [{'type': 'model_output', 'content': [{'type': 'text', 'text': 'here'},
                                              {'type': 'image', 'data': 'iVBORw==', 'mime_type': 'image/png'},
                                              {'type': 'image', 'uri': PNG_URL, 'mime_type': 'image/png'}]},
         {'type': 'user_input', 'content': [{'type': 'text', 'text': 'nice'}]}],
    ('bedrock', 'images in an assistant turn'):
        [{'role': 'assistant', 'content': [{'text': 'here'}]},
         {'role': 'user', 'content': [{'text': 'nice'}, {'cachePoint': {'type': 'default'}}]}],
}



# a text between the results goes as a text before them does, but on the Responses API (its input items keep the order)
EXPECT.update({(wire, "text between the results"): EXPECT[(wire, "text before the results")]
               for wire in WIRES if wire != "openai-responses"})
# a text typed in a message of its own before the results' message (while the tools ran) goes as a text before the
# results in their message does: the wires that take the results only in the turn right after the call (Anthropic,
# Gemini and Interactions, Chat Completions) get that run of user messages as one (Anthropic: "tool_result blocks
# must come first"; Chat Completions: the tool messages follow the assistant message; Gemini: the function response
# turn follows the function call turn), as Bedrock joins consecutive user messages; the Responses API's input items
# keep the order
RESULTS = {  # the results of CALLS ("r1", "r2") as each wire sends them
    "openai-chat": [{'role': 'tool', 'tool_call_id': 'c1', 'content': 'r1'},
                    {'role': 'tool', 'tool_call_id': 'c2', 'content': 'r2'}],
    "openai-responses": [{'type': 'function_call_output', 'call_id': 'c1', 'output': 'r1'},
                         {'type': 'function_call_output', 'call_id': 'c2', 'output': 'r2'}],
    "anthropic": [{'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 'c1', 'content': 'r1'},
                                               {'type': 'tool_result', 'tool_use_id': 'c2', 'content': 'r2'}]}],
    "gemini": [{'role': 'user',
                'parts': [{'functionResponse': {'name': 'f', 'id': 'c1', 'response': {'result': 'r1'}}},
                          {'functionResponse': {'name': 'g', 'id': 'c2', 'response': {'result': 'r2'}}}]}],
    "gemini-interactions": [{'type': 'function_result', 'call_id': 'c1', 'name': 'f', 'result': 'r1'},
                            {'type': 'function_result', 'call_id': 'c2', 'name': 'g', 'result': 'r2'}],
}
# -- two assistant messages in a row: Gemini takes a function call turn only after a user turn or a function
# response turn ("Please ensure that function call turn comes immediately after a user turn or after a function
# response turn", a 400): the second joins the first's model content, as Bedrock joins them; Anthropic's API joins
# consecutive turns of a role itself; Chat Completions and the steps of Responses and Interactions take them apart
EXPECT.update({
    ('openai-chat', 'two assistant messages in a row'):
        [{'role': 'assistant', 'content': 'let me see'}, *CALLED['openai-chat'], *RESULTS['openai-chat']],
    ('openai-responses', 'two assistant messages in a row'):
        [{'type': 'message', 'role': 'assistant',
          'content': [{'type': 'output_text', 'text': 'let me see', 'annotations': []}]},
         *CALLED['openai-responses'], *RESULTS['openai-responses']],
    ('anthropic', 'two assistant messages in a row'):
        [{'role': 'assistant', 'content': [{'type': 'text', 'text': 'let me see'}]}, *CALLED['anthropic'],
         *RESULTS['anthropic']],
    ('gemini', 'two assistant messages in a row'):
        [{'role': 'model', 'parts': [{'text': 'let me see'}, *CALLED['gemini'][0]['parts']]}, *RESULTS['gemini']],
    ('gemini-interactions', 'two assistant messages in a row'):
        [{'type': 'model_output', 'content': [{'type': 'text', 'text': 'let me see'}]},
         *CALLED['gemini-interactions'], *RESULTS['gemini-interactions']],
    ('bedrock', 'two assistant messages in a row'):
        [{'role': 'assistant', 'content': [{'text': 'let me see'}, *CALLED['bedrock'][0]['content']]},
         {'role': 'user', 'content': [{'toolResult': {'toolUseId': 'c1', 'content': [{'text': 'r1'}]}},
                                      {'toolResult': {'toolUseId': 'c2', 'content': [{'text': 'r2'}]}},
                                      {'cachePoint': {'type': 'default'}}]}],
})
# -- an assistant message first (a history cut to fit the context window): Bedrock Converse refuses it ("A conversation
# must start with a user message", a 400), Gemini a function call turn first ("Please ensure that function call turn
# comes immediately after a user turn or after a function response turn"); the others take it
EXPECT.update({
    ('openai-chat', 'an assistant message first'): [*CALLED['openai-chat'], *RESULTS['openai-chat']],
    ('openai-responses', 'an assistant message first'): [*CALLED['openai-responses'], *RESULTS['openai-responses']],
    ('anthropic', 'an assistant message first'): [*CALLED['anthropic'], *RESULTS['anthropic']],
    ('gemini', 'an assistant message first'):
        (ConfigError, "gemini: the messages start with an assistant message holding tool calls, which Gemini refuses "
                      "(a function call turn comes right after a user turn or a function response turn): begin with "
                      "the user message it answered"),
    ('gemini-interactions', 'an assistant message first'):
        [*CALLED['gemini-interactions'], *RESULTS['gemini-interactions']],
    ('bedrock', 'an assistant message first'):
        (ConfigError, "bedrock: the messages start with an assistant message, which Bedrock Converse refuses (a "
                      "conversation starts with a user message): begin with the user message it answered"),
})
EXPECT.update({(wire, "a text message before the results' message"): EXPECT[(wire, "text before the results")]
               for wire in WIRES})


def _send(wire, messages, aws_env):
    """The body a local server records for one call of ``wire`` (None: nothing reached it), and the error the call
    raised before sending (None: it was sent)."""
    if wire == "bedrock":
        server = BedrockServer(enforce=False)
    else:
        server = SSEServer()
    with server:
        if wire == "bedrock":
            aws_env.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
        client = plan_client(wire, server.url)
        try:
            stream = client.streaming_response(messages, CONFIG)
        except AgentHubError as exc:
            return None, exc
        try:
            list(stream)
        except AgentHubError:
            pass  # (the local server's answer is no real one: only the request is looked at)
        finally:
            stream.close()
        assert len(server.requests) == 1
        return server.requests[0]["body"], None


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("case", list(CASES))
def test_each_part_reaches_the_wire_or_is_refused_before_sending(wire, case, aws_env):
    expected = EXPECT[(wire, case)]
    body, error = _send(wire, CASES[case], aws_env)
    if isinstance(expected, tuple):
        kind, message = expected
        assert body is None, "sent, where {} was expected".format(kind.__name__)
        assert type(error) is kind and str(error) == message
    else:
        assert error is None, "refused: {}".format(error)
        assert EXTRACT[wire](body) == expected


#: (client_type, model, base_url) -> the image types its host takes
IMAGE_HOSTS = {
    ("openai-chat", "gpt-5.5", "https://api.openai.com/v1"): ("PNG, JPEG, WebP or GIF", "Chat Completions"),
    ("openai-responses", "gpt-5.5", "https://api.openai.com/v1"): ("PNG, JPEG, WebP or GIF", "the Responses API"),
    ("gemini", "gemini-3.5-flash", "https://generativelanguage.googleapis.com"):
        ("PNG, JPEG, WebP, HEIC or HEIF", "the Gemini API"),
    # (the Interactions API's image mime_type is an enum of eight: google-genai's ImageContentMimeType)
    ("gemini-interactions", "gemini-3.5-flash", "https://generativelanguage.googleapis.com"):
        ("PNG, JPEG, WebP, HEIC, HEIF, GIF, BMP or TIFF", "the Interactions API"),
}
TAKEN = {"PNG, JPEG, WebP or GIF": {"image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif"},
         "PNG, JPEG, WebP, HEIC or HEIF": {"image/png", "image/jpeg", "image/jpg", "image/webp", "image/heic",
                                           "image/heif"},
         "PNG, JPEG, WebP, HEIC, HEIF, GIF, BMP or TIFF": {"image/png", "image/jpeg", "image/jpg", "image/webp",
                                                           "image/heic", "image/heif", "image/gif", "image/bmp",
                                                           "image/tiff"}}


def _image_cases(mime):
    uri = "data:{};base64,AAEC".format(mime)
    return {"inline_data": [_user({"type": "text", "text": "q"},
                                  {"type": "inline_data", "data": b"\x00\x01\x02", "mime_type": mime})],
            "a data URI": [_user({"type": "text", "text": "q"}, {"type": "image_url", "image_url": uri})],
            "a tool result's image": [ASK, CALLS, _user(_result("c1", "r1", images=[uri]), _result("c2", "r2"))]}


@pytest.mark.parametrize("host", list(IMAGE_HOSTS), ids=lambda host: host[0])
@pytest.mark.parametrize("mime", ["image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif", "image/heic",
                                  "image/heif", "image/svg+xml", "image/bmp", "image/tiff"])
def test_an_image_type_the_host_does_not_take_is_refused_before_sending(host, mime):
    client_type, model, base_url = host
    names, wire = IMAGE_HOSTS[host]
    client = AutoLLMClient(model, client_type=client_type, base_url=base_url, api_key="k")
    for how, messages in _image_cases(mime).items():
        if mime.lower() in TAKEN[names]:
            client.plan(messages, CONFIG)
            continue
        with pytest.raises(UnsupportedParameterError) as caught:
            client.plan(messages, CONFIG)
        assert str(caught.value) == "{}: inline_data of type {} cannot be sent over {} (its images are {})".format(
            client_type, mime, wire, names), how


#: wire -> (the images it takes, in its errors; the API's name)
URL_IMAGES = {"gemini": ("PNG, JPEG, WebP, HEIC or HEIF", "the Gemini API"),
              "gemini-interactions": ("PNG, JPEG, WebP, HEIC, HEIF, GIF, BMP or TIFF", "the Interactions API")}


@pytest.mark.parametrize("wire,url,refused", [
    ("gemini", "https://files.example/a.gif", "image/gif"), ("gemini", "gs://bucket/b.svg?x=1", "image/svg+xml"),
    ("gemini", "https://files.example/c.png", None), ("gemini", "https://files.example/d", None),
    ("gemini-interactions", "https://files.example/a.svg", "image/svg+xml"),
    ("gemini-interactions", "https://files.example/c.gif", None),
    ("gemini-interactions", "https://files.example/d", None)])
def test_an_image_url_whose_extension_names_a_type_the_wire_refuses_is_refused(wire, url, refused):
    """Gemini's fileData and the Interactions API's image block go with the type the URL's extension names: one the
    wire does not take is refused, in a user message, an assistant message and a tool result alike."""
    client = AutoLLMClient("gemini-3.5-flash", client_type=wire, api_key="k",
                           base_url="https://generativelanguage.googleapis.com")
    image = {"type": "image_url", "image_url": url}
    for messages in ([_user({"type": "text", "text": "q"}, image)],
                     [ASK, {"role": "assistant", "content_items": [image]}, _user({"type": "text", "text": "ok"})],
                     [ASK, CALLS, _user(_result("c1", "r1", images=[url]), _result("c2", "r2"))]):
        if refused is None:
            client.plan(messages, CONFIG)
            continue
        with pytest.raises(UnsupportedParameterError) as caught:
            client.plan(messages, CONFIG)
        names, api = URL_IMAGES[wire]
        assert str(caught.value) == "{}: image_url of type {} cannot be sent over {} (its images are {})".format(
            wire, refused, api, names)
        assert caught.value.parameter == "image_url"


def test_a_local_chat_server_is_sent_any_image_type():
    """A server not known to run OpenAI's models may take other types (vLLM reads what its image library reads)."""
    for client_type in ("openai-chat", "openai-responses"):
        client = AutoLLMClient("m", client_type=client_type, base_url="http://127.0.0.1:9/v1", api_key="k")
        for messages in _image_cases("image/bmp").values():
            client.plan(messages, CONFIG)


WIRE_NAMES = {"openai-chat": "Chat Completions", "openai-responses": "the Responses API",
              "anthropic": "the Anthropic API", "bedrock": "Bedrock Converse"}


@pytest.mark.parametrize("wire", WIRES)
def test_an_assistant_image_a_wire_refuses_is_left_out_with_a_warning(wire, caplog):
    client = plan_client(wire) if wire != "bedrock" else AutoLLMClient(
        MODELS[wire], client_type="bedrock", base_url="http://127.0.0.1:9", api_key="ABSKbedrock-api-key-0003")
    with caplog.at_level(logging.WARNING, logger="agenthub"):
        client.plan(CASES["images in an assistant turn"], CONFIG)
    warned = [record.getMessage() for record in caplog.records if "assistant" in record.getMessage()]
    if wire in WIRE_NAMES:
        assert warned == ["an assistant {} item cannot be replayed over {}; it is left out".format(
            kind, WIRE_NAMES[wire]) for kind in ("inline_data", "image_url")]
    else:
        assert warned == []


# -- config["tools"]: a name the wire refuses is a ConfigError before sending (the tool runner's rule) ----------

#: name -> the wires that take it (every other wire refuses it)
NAMES = {
    "get_weather-2": set(WIRES),
    "a.b:c": {"gemini", "gemini-interactions"},  # Gemini's names may hold '.' and ':'
    "1abc": {"openai-chat", "openai-responses", "anthropic", "bedrock"},  # Gemini's start with a letter or '_'
    "x" * 100: {"anthropic"},  # Anthropic takes 128 characters, the others 64
    "get weather": set(),
    "天気": set(),
}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("name", list(NAMES), ids=lambda name: name[:16])
def test_a_tool_name_the_wire_refuses_is_a_config_error_before_sending(wire, name, aws_env):
    config = {"tools": [{"name": "ok"}, {"name": name}]}
    if wire == "bedrock":
        server = BedrockServer(enforce=False)
    else:
        server = SSEServer()
    with server:
        if wire == "bedrock":
            aws_env.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
        client = plan_client(wire, server.url)
        if wire in NAMES[name]:
            stream = client.streaming_response([ASK], config)
            try:
                list(stream)
            except AgentHubError:
                pass
            finally:
                stream.close()
            assert len(server.requests) == 1
            return
        with pytest.raises(ConfigError) as info:
            client.streaming_response([ASK], config)
        assert server.requests == []
    rule = {"gemini": "a letter or '_' first, then letters, digits, '_', '.', ':' or '-', at most 64",
            "anthropic": "letters, digits, '_' or '-', at most 128"}
    rule["gemini-interactions"] = rule["gemini"]
    assert str(info.value) == "config['tools'][1]: {!r} is not a valid tool name on {} ({} tool names are {})".format(
        name, wire, wire, rule.get(wire, "letters, digits, '_' or '-', at most 64"))


def test_anthropic_cache_control_on_a_message_is_a_config_error_naming_cache_breakpoint():
    message = {"role": "user", "content_items": [{"type": "text", "text": "q"}],
               "cache_control": {"type": "ephemeral"}}
    with pytest.raises(ConfigError) as info:
        plan_client("anthropic").plan([message])
    assert str(info.value) == NOT_CACHE_CONTROL[1].replace("['content_items'][0]", "")


# -- the round trip: a recorded answer, collected, goes back on its own wire as the provider sent it -----------

_RESPONSES_KEYS = {"reasoning": ("type", "summary", "encrypted_content"),  # (store=false: no item id goes back)
                   "message": ("type", "role", "content", "phase"),
                   "function_call": ("type", "call_id", "name", "arguments")}


def _answer_and_next_turn(client_type, data):
    """The recorded answer collected through the client, and the next request's items after the first user message
    (the answer, then a result for each call or a user text)."""
    with SSEServer() as server:
        server.answers.append(Answer([data]))
        client = AutoLLMClient("gpt-5.5", client_type=client_type, api_key="k", base_url=server.url + "/v1",
                               max_retries=0)
        answer = collect(client.streaming_response([ASK], CONFIG))
        calls = [item for item in answer["content_items"] if item["type"] == "tool_call"]
        after = _user(*[_result(call["tool_call_id"], "ok") for call in calls]) if calls else \
            _user({"type": "text", "text": "more"})
        return client.plan([ASK, answer, after], CONFIG).body


def _recorded(protocol):
    return [param for param in wire_params(protocol)
            if param.values[0] is None or not param.values[2]["expect"].get("error")]


@pytest.mark.parametrize("name,data,sidecar", _recorded("openai_responses"))
def test_a_recorded_responses_answer_goes_back_as_its_output_items(name, data, sidecar):
    done = [json.loads(line[5:]) for line in data.decode("utf-8").splitlines() if line.startswith("data:")]
    items = [event["item"] for event in done if event.get("type") == "response.output_item.done"]
    expected = []
    for item in items:
        wire = {key: item[key] for key in _RESPONSES_KEYS[item["type"]] if key in item}
        if item["type"] == "message":
            wire["content"] = [{"type": "output_text", "text": part["text"], "annotations": part["annotations"]}
                               for part in item["content"]]
        expected.append(wire)
    body = _answer_and_next_turn("openai-responses", data)
    assert _after_ask(body["input"])[:len(expected)] == expected


@pytest.mark.parametrize("name,data,sidecar", _recorded("openai_chat"))
def test_a_recorded_chat_answer_goes_back_with_its_reasoning_field_text_and_calls(name, data, sidecar):
    expect = sidecar["expect"]
    chunks = [json.loads(line[5:]) for line in data.decode("utf-8").splitlines()
              if line.startswith("data:") and line[5:].strip() != "[DONE]"]
    deltas = [choice.get("delta") or {} for chunk in chunks for choice in chunk.get("choices") or ()]
    field = next((key for key in ("reasoning_content", "reasoning") for delta in deltas if delta.get(key)), None)
    wire = {"role": "assistant", "content": expect["text"] or None}
    if field:
        wire[field] = expect["thinking"]
    if expect["tool_calls"]:
        wire["tool_calls"] = [{"id": call["id"], "type": "function", "function": {
            "name": call["name"], "arguments": json.dumps(call["arguments"], separators=(",", ":"),
                                                          ensure_ascii=False)}} for call in expect["tool_calls"]]
    # sent to a host whose row reads that field (a host of no row is sent none: test_chat_reasoning_hosts)
    body = _answer_and_next_turn({"reasoning_content": "vllm", "reasoning": "ollama"}.get(field, "openai-chat"), data)
    sent = dict(_after_ask(body["messages"])[0])
    sent.pop("reasoning_details", None)  # (OpenRouter's signed details: checked by test_openai_chat)
    assert sent == wire


def test_results_given_one_message_each_go_as_one_turn(aws_env):
    """The results of one model turn's calls given one user message each (as Chat Completions' tool messages come):
    Gemini takes the turn right after a function call turn as all its responses ("the number of function response
    parts is equal to the number of function call parts", a 400), so they go as one content there, and as one
    message on Claude's wires, the same as given in one message."""
    split = [ASK, CALLS, _user(_result("c1", "r1")), _user(_result("c2", "r2"))]
    together = [ASK, CALLS, _user(_result("c1", "r1"), _result("c2", "r2"))]
    for wire in WIRES:
        assert _send(wire, split, aws_env)[0] == _send(wire, together, aws_env)[0], wire
