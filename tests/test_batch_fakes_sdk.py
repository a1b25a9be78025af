"""The batch fakes (tests/batch_fakes.py) driven by the official SDKs: proof that they speak the wire
the SDKs speak, so agenthub's backends, tested against the same fakes, speak it too.  Each test is
skipped where its SDK is not installed (test-only dependencies, see setup.cfg)."""

import io
import json

import pytest

from batch_fakes import KEYS, BatchFake


@pytest.fixture
def fake():
    with BatchFake(polls=2) as server:
        yield server


def _chat_line(custom_id, text, model="gpt-4.1-mini"):
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "messages": [{"role": "user", "content": text}]}}


def test_openai_sdk_runs_a_batch_on_the_fake(fake):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=fake.url + "/v1", api_key=KEYS["openai"], max_retries=0)
    data = "".join(json.dumps(line) + "\n" for line in [_chat_line("a", "hi there"), _chat_line("b", "FAIL me")])
    uploaded = client.files.create(file=("in.jsonl", io.BytesIO(data.encode())), purpose="batch")
    assert (uploaded.purpose, uploaded.bytes, uploaded.filename) == ("batch", len(data), "in.jsonl")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert batch.status == "validating" and batch.input_file_id == uploaded.id
    assert client.batches.retrieve(batch.id).status == "in_progress"
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed"
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (2, 1, 1)
    out = [json.loads(line) for line in client.files.content(done.output_file_id).text.splitlines()]
    assert [(o["custom_id"], o["response"]["status_code"]) for o in out] == [("a", 200)]
    assert out[0]["response"]["body"]["choices"][0]["message"]["content"] == "echo: hi there"
    errors = [json.loads(line) for line in client.files.content(done.error_file_id).text.splitlines()]
    assert errors[0]["custom_id"] == "b" and errors[0]["response"]["status_code"] == 400
    assert errors[0]["response"]["body"]["error"]["type"] == "invalid_request_error"


def test_openai_sdk_sees_the_fake_refuse_what_the_guide_forbids(fake):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=fake.url + "/v1", api_key=KEYS["openai"], max_retries=0)
    two_models = [_chat_line("a", "x", "gpt-4.1-mini"), _chat_line("b", "y", "gpt-4.1")]
    data = "".join(json.dumps(line) + "\n" for line in two_models).encode()
    uploaded = client.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert batch.status == "failed"
    assert [e.code for e in batch.errors.data] == ["model_mismatch"]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=fake.url + "/v1", api_key="sk-wrong", max_retries=0).batches.retrieve(batch.id)


def test_openai_sdk_cancel_and_expiry_on_the_fake():
    openai = pytest.importorskip("openai")
    with BatchFake(polls=1, run_only=1) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key=KEYS["openai"], max_retries=0)
        data = "".join(json.dumps(_chat_line(c, c)) + "\n" for c in "abc").encode()
        uploaded = client.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
        expired = client.batches.retrieve(client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h").id)
        assert expired.status == "expired"
        lines = [json.loads(x) for x in client.files.content(expired.error_file_id).text.splitlines()]
        assert [(x["custom_id"], x["error"]["code"]) for x in lines] == [("b", "batch_expired"), ("c", "batch_expired")]
        second = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                       completion_window="24h")
        assert client.batches.cancel(second.id).status == "cancelling"
        cancelled = client.batches.retrieve(second.id)
        assert cancelled.status == "cancelled" and cancelled.output_file_id is not None


def test_openai_sdk_on_the_azure_v1_route(fake):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=fake.url + "/openai/v1/", api_key="unused", max_retries=0,
                           default_headers={"api-key": KEYS["azure"]})
    data = (json.dumps(_chat_line("a", "hi", "my-batch-deployment")) + "\n").encode()
    uploaded = client.files.create(file=("test.jsonl", io.BytesIO(data)), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/chat/completions", completion_window="24h")
    assert batch.status == "Validating"  # Azure's REST examples show capitalised statuses
    client.batches.retrieve(batch.id)
    done = client.batches.retrieve(batch.id)
    assert done.status == "Completed"
    out = json.loads(client.files.content(done.output_file_id).text)
    assert out["response"]["body"]["model"] == "my-batch-deployment"


def test_anthropic_sdk_runs_a_message_batch_on_the_fake(fake):
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=fake.url, api_key=KEYS["anthropic"], max_retries=0)
    params = {"model": "claude-sonnet-4-6", "max_tokens": 10}
    batch = client.messages.batches.create(requests=[
        {"custom_id": "a", "params": dict(params, messages=[{"role": "user", "content": "hi"}])},
        {"custom_id": "b", "params": dict(params, messages=[{"role": "user", "content": "FAIL"}])}])
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 2
    assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.results_url
    assert (ended.request_counts.succeeded, ended.request_counts.errored) == (1, 1)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["a"].type == "succeeded" and results["a"].message.content[0].text == "echo: hi"
    assert results["b"].type == "errored" and results["b"].error.error.type == "invalid_request_error"
    other = client.messages.batches.create(requests=[
        {"custom_id": "c", "params": dict(params, messages=[{"role": "user", "content": "x"}])}])
    assert client.messages.batches.cancel(other.id).processing_status == "canceling"
    assert client.messages.batches.retrieve(other.id).request_counts.canceled == 1
    assert [r.result.type for r in client.messages.batches.results(other.id)] == ["canceled"]


def test_anthropic_sdk_sees_the_fake_refuse_a_bad_custom_id(fake):
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=fake.url, api_key=KEYS["anthropic"], max_retries=0)
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.create(requests=[{"custom_id": "has space", "params": {
            "model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}}])


def _genai(fake):
    genai = pytest.importorskip("google.genai")
    return genai.Client(api_key=KEYS["gemini"], http_options={"base_url": fake.url, "api_version": "v1beta"})


def test_genai_sdk_runs_an_inline_batch_on_the_fake(fake):
    client = _genai(fake)
    job = client.batches.create(model="gemini-2.5-flash", src=[
        {"contents": [{"parts": [{"text": "hello"}], "role": "user"}], "metadata": {"key": "r1"}},
        {"contents": [{"parts": [{"text": "FAIL"}], "role": "user"}], "metadata": {"key": "r2"}}],
        config={"display_name": "inline-1"})
    assert job.name.startswith("batches/") and job.state.name == "JOB_STATE_PENDING"
    assert client.batches.get(name=job.name).state.name == "JOB_STATE_RUNNING"
    done = client.batches.get(name=job.name)
    assert done.state.name == "JOB_STATE_SUCCEEDED"
    first, second = done.dest.inlined_responses
    assert first.metadata == {"key": "r1"} and first.response.text == "echo: hello"
    assert second.metadata == {"key": "r2"} and second.error.code == 400


def test_genai_sdk_uploads_a_file_batch_and_downloads_its_results(fake, tmp_path):
    client = _genai(fake)
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps({"key": "k1", "request": {"contents": [{"parts": [{"text": "from file"}]}]}}) + "\n")
    uploaded = client.files.upload(file=str(path), config={"display_name": "requests", "mime_type": "jsonl"})
    assert uploaded.name.startswith("files/")
    job = client.batches.create(model="gemini-2.5-flash", src=uploaded.name, config={"display_name": "file-1"})
    client.batches.get(name=job.name)
    done = client.batches.get(name=job.name)
    assert done.state.name == "JOB_STATE_SUCCEEDED" and done.dest.file_name.startswith("files/")
    lines = [json.loads(x) for x in client.files.download(file=done.dest.file_name).decode().splitlines()]
    assert lines[0]["key"] == "k1"
    assert lines[0]["response"]["candidates"][0]["content"]["parts"][0]["text"] == "echo: from file"
    second = client.batches.create(model="gemini-2.5-flash", src=uploaded.name, config={"display_name": "file-2"})
    client.batches.cancel(name=second.name)
    assert client.batches.get(name=second.name).state.name == "JOB_STATE_CANCELLED"


def test_genai_sdk_runs_an_embeddings_batch_on_the_fake(fake):
    client = _genai(fake)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_embeddings is marked experimental by the SDK
        job = client.batches.create_embeddings(
            model="gemini-embedding-001",
            src={"inlined_requests": {"contents": [{"parts": [{"text": "abc"}]}, {"parts": [{"text": "hello"}]}],
                                      "config": {"output_dimensionality": 3}}},
            config={"display_name": "embed-1"})
    call = json.loads(fake.calls("POST", "/v1beta/models/gemini-embedding-001:asyncBatchEmbedContent")[0]["body"])
    assert [r["request"]["content"]["parts"][0]["text"] for r in call["batch"]["inputConfig"]["requests"]["requests"]] \
        == ["abc", "hello"]
    client.batches.get(name=job.name)
    done = client.batches.get(name=job.name)
    assert done.state.name == "JOB_STATE_SUCCEEDED"
    vectors = [r.response.embedding.values for r in done.dest.inlined_embed_content_responses]
    assert vectors == [[3.0, 0.25, -0.5], [5.0, 0.25, -0.5]]
