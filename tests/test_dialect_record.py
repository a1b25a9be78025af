"""Each wire dialect is declared once, by its ``Protocol`` record (issue 28 item 3): what only some dialects
do (config keys they accept, chained turns, resumed background streams, token counting, compaction) is a field
of the record, and the old places (attributes on ``build_request``, module names) are aliases of it."""

import importlib

import pytest

from agenthub import providers
from agenthub.providers._common import Count, Protocol, Resume

NAMES = list(providers.PROTOCOLS)

#: dialect -> (accepts, chains_turns, resumes, counts, compaction_format)
TRAITS = {
    "openai-chat": ((), False, False, False, None),
    "openai-responses": (("background", "compaction"), False, True, True, "openai"),
    "anthropic": (("compaction",), False, False, True, "anthropic"),
    "gemini": ((), False, False, True, None),
    "gemini-interactions": (("background",), True, True, False, None),
    "bedrock": ((), False, False, True, None),
    "agenthub": ((), False, False, False, None),
}


def test_every_dialect_has_a_row_here():
    assert sorted(TRAITS) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_record_declares_what_the_dialect_does(name):
    record = providers.protocol(name)
    accepts, chains, resumes, counts, compaction = TRAITS[name]
    assert isinstance(record, Protocol)
    assert record.accepts == accepts
    assert record.chains_turns is chains
    assert (record.stored_answer is not None) is chains
    assert isinstance(record.resume, Resume) if resumes else record.resume is None
    assert isinstance(record.count, Count) if counts else record.count is None
    assert record.compaction_format == compaction


@pytest.mark.parametrize("name", NAMES)
def test_the_old_places_are_aliases_of_the_record(name):
    record = providers.protocol(name)
    module = importlib.import_module("agenthub.providers." + record.module)
    assert getattr(record.build_request, "accepts", ()) == record.accepts
    assert getattr(record.build_request, "chains_turns", False) is record.chains_turns
    assert getattr(record.build_request, "stored_answer", None) is record.stored_answer
    assert not hasattr(record.build_request, "compaction_format")  # never read: gone
    if record.resume is not None:
        assert (module.resume_request, module.cancel_request, module.frame_cursor, module.ordered_cursors) == (
            record.resume.request, record.resume.cancel, record.resume.frame_cursor, record.resume.ordered)
    if record.count is not None:
        assert (module.count_request, module.COUNT_FIELD) == (record.count.request, record.count.field)
    else:
        assert not hasattr(module, "count_request")


def test_cursor_order_per_dialect():
    assert providers.protocol("openai-responses").resume.ordered is True
    assert providers.protocol("gemini-interactions").resume.ordered is False
