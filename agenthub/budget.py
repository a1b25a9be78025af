"""Spending limits: ``agenthub.Budget(max_usd)``, shared by any number of clients and threads.

Before each request the worst case is reserved: its input (counted, or the local estimate of
``estimate_tokens``; its audio items at the model's audio input price, where it has one; the model's whole
context window when an audio item's bytes do not say how long it lasts) plus ``max_tokens`` of
output (all of it image or audio tokens, on a model whose image or audio output has its own price), at the
model's list prices from the catalog
(the dearest way the input may be billed: plain input, or written to the prompt cache where the
model has a write surcharge; long-context prices when the input is above the model's threshold).
When spent + held + that worst case is above ``max_usd``, ``BudgetExceededError`` is raised and
the request is never sent.  After the answer the hold is replaced by the turn's actual cost
(``agenthub.cost`` of its usage); a request that fails without an answer releases its hold.

A model the catalog has no price for cannot run under a budget (ConfigError, before anything is
sent) unless ``Budget(max_usd, allow_unpriced=True)``: then it runs and costs nothing here.

``store=`` keeps the account where several processes or machines share it (``agenthub.stores``:
``"sqlite:///path"``, ``"redis://host:port/db"``), under the name ``key=``: the check and the hold are one
atomic step of the store, and a hold is a lease its process renews (a killed process's holds expire
and count their whole worst case).  None: this process only, as always.  See docs/many-workers.md.
"""

import threading
import uuid
from typing import Any, Dict, List, Mapping, Optional, Set, Union

from .attempts import Attempt, AttemptHook
from .errors import AgentHubError, BudgetExceededError, ConfigError
from .estimate import IMAGE_TOKENS, MEDIA_TOKENS, estimate_tokens  # the local estimate (written once there)
from .stores import LEASE_SECONDS, check_key, open_store
from .stores.base import Renewer
from ._forks import renew_lock_after_fork

__all__ = ["Budget", "Reservation", "estimate_tokens", "worst_case_usd", "IMAGE_TOKENS", "MEDIA_TOKENS"]


def _caching(value: Any) -> str:
    value = getattr(value, "value", value)
    if value is None:
        return "enable"  # PromptCaching's default
    if value not in ("enable", "disable", "enhance"):
        raise ConfigError("prompt_caching must be enable, disable or enhance (got {!r})".format(value))
    return str(value)


def worst_case_usd(model: str, input_tokens: int, max_output_tokens: int, *, tier: Optional[str] = None,
                   batch: bool = False, prompt_caching: Any = None, audio_tokens: int = 0) -> Optional[float]:
    """The most a request can cost at list price: all input billed the dearest way it may be (plain,
    or written to the prompt cache where the model prices writes: 5-minute writes unless
    ``prompt_caching`` is ``disable``, 1-hour ones too when it is ``enhance``; ``audio_tokens`` of it, the
    request's audio, at the model's audio input price where it has one) and
    ``max_output_tokens`` of output (image or audio tokens, on a model whose image or audio output costs more),
    at the dearest tier it may be billed at (with no ``tier``, on a
    model priced by the time of day: its standard prices and each time-of-day tier's, since the
    window may change while the request runs).  None when the model has no price."""
    from .catalog import _find, cost, timed_tiers
    from .stream import with_audio, with_output_images

    buckets = with_audio({"prompt_tokens": input_tokens, "cached_tokens": 0, "thoughts_tokens": 0,
                          "response_tokens": max_output_tokens}, min(audio_tokens, input_tokens))
    # (every output token at the dearest output price: an image model's image-output price, an audio model's
    # audio-output price, where it has one)
    usages = [with_output_images(buckets, max_output_tokens),
              with_audio(buckets, getattr(buckets, "input_audio_tokens", None), None, max_output_tokens)]
    tiers = [tier]  # type: List[Optional[str]]
    if tier is None and not batch:
        row = _find(model, None)
        tiers = ["standard"]
        tiers.extend(timed_tiers(row) if row is not None else ())
    caching = _caching(prompt_caching)
    durations = {"disable": (), "enable": ("5m",), "enhance": ("5m", "1h")}[caching]
    candidates = []
    for name in tiers:
        plain = [cost(model, usage, tier=name, batch=batch, cache_writes=0) for usage in usages]
        if plain[0] is None:
            if name == tiers[0]:
                return None
            continue
        candidates.extend(price for price in plain if price is not None)
        if input_tokens:
            for writes in ({duration: input_tokens} for duration in durations):
                for usage in usages:
                    price = cost(model, usage, tier=name, batch=batch, cache_writes=writes)
                    if price is not None:
                        candidates.append(price)
    return max(candidates)


def _usd(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 \
            or value == float("inf"):
        raise ConfigError("{} must be a non-negative number of US dollars (got {!r})".format(what, value))
    return float(value)


class Budget(object):
    """A hard spending limit in USD, thread-safe; share one between clients, threads and jobs.

    ``spent_usd``: the actual cost of the requests settled; ``reserved_usd``: the worst cases held for
    requests under way; ``remaining_usd``: ``max_usd`` minus both (never below 0).  ``store`` / ``key``:
    where the account is kept and under which name (None: in this process).
    """

    def __init__(self, max_usd: float, allow_unpriced: bool = False, *, store: Any = None,
                 key: Optional[str] = None) -> None:
        self.max_usd = _usd(max_usd, "max_usd")
        if not isinstance(allow_unpriced, bool):
            raise ConfigError("allow_unpriced must be True or False")
        self.allow_unpriced = allow_unpriced
        self.key = check_key(key)
        self._lock = threading.Lock()
        #: where the account is kept (spent, settled requests, holds): an agenthub.stores.Store
        self.store = open_store(store)
        self._leases = Renewer(self.store, self.key, LEASE_SECONDS) if self.store.leases else None
        renew_lock_after_fork(self)

    @property
    def account(self) -> Any:
        """The account this budget draws from (``Store.account``): another Budget of the same store and key draws
        from it too, and a failover call holds and settles once on it, whichever budgets its routes name."""
        return self.store.account(self.key)

    @property
    def spent_usd(self) -> float:
        return self.store.budget_totals(self.key)[0]

    @property
    def reserved_usd(self) -> float:
        return self.store.budget_totals(self.key)[1]

    @property
    def remaining_usd(self) -> float:
        spent, held, _ = self.store.budget_totals(self.key)
        return max(0.0, self.max_usd - spent - held)

    @property
    def requests(self) -> int:
        """Requests settled."""
        return self.store.budget_totals(self.key)[2]

    def reserve(self, model: str, input_tokens: int, max_output_tokens: int, *, tier: Optional[str] = None,
                batch: bool = False, prompt_caching: Any = None, at: Any = None,
                audio_tokens: int = 0) -> "Reservation":
        """Hold the worst case of one request (``worst_case_usd``), or raise BudgetExceededError
        (nothing is held then).  ``at``: when the request is sent (Unix seconds or a datetime; None: now),
        the time its settlement prices it at on a model priced by the time of day.  ``audio_tokens``: how many
        of ``input_tokens`` are audio (held at the model's audio input price, where it has one).

        ConfigError for a model without a price (unless ``allow_unpriced``) or bad counts.
        """
        from .stream import MAX_USAGE_TOKENS

        for name, value in (("input_tokens", input_tokens), ("max_output_tokens", max_output_tokens),
                            ("audio_tokens", audio_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError("{} must be a non-negative int (got {!r})".format(name, value))
        from .catalog import _clock, _seconds

        sent = _clock() if at is None else _seconds(at)
        if audio_tokens > input_tokens:
            raise ConfigError("audio_tokens ({}) exceed the input_tokens ({}) they are part of".format(
                audio_tokens, input_tokens))
        needed = worst_case_usd(model, input_tokens, max_output_tokens, tier=tier, batch=batch,
                                prompt_caching=prompt_caching, audio_tokens=audio_tokens)
        if needed is None:
            too_many = [(name, value) for name, value in (("input_tokens", input_tokens),
                                                          ("max_output_tokens", max_output_tokens))
                        if value > MAX_USAGE_TOKENS]
            if too_many and worst_case_usd(model, 0, 0, tier=tier, batch=batch) is not None:
                # a priced model asked for more tokens than any price counts: refused, never let run uncounted
                raise ConfigError("{} of {} is above the {:,} tokens a budget can price for one request: set a "
                                  "smaller max_tokens (or send less)".format(too_many[0][0], too_many[0][1],
                                                                              MAX_USAGE_TOKENS))
            if not self.allow_unpriced:
                raise ConfigError(
                    "model {!r} has no list price in the catalog{}: a budget cannot bound what it costs; pass "
                    "Budget(max_usd, allow_unpriced=True) to let it run uncounted".format(
                        model, " for tier {!r}".format(tier) if tier else " for batch" if batch else ""))
            return Reservation(self, model, 0.0, tier, batch, priced=False, at=sent)
        hold_id = uuid.uuid4().hex
        try:
            ok, held = self.store.budget_hold(self.key, self.max_usd, needed, hold_id,
                                              None if self._leases is None else self._leases.lease)
        except AgentHubError as exc:
            # the store may have held it and its answer been lost (a connection cut, a timeout): the lease thread
            # lets it go as soon as the store answers, not left to expire and count its worst case for a request
            # never sent (a hold never written: nothing to let go; a store never reached, a refusal, a corrupt row:
            # nothing was held)
            if self._leases is not None and getattr(exc, "retryable", False) and \
                    not exc.__dict__.get("_agenthub_unsent"):
                self._leases.settle_later(hold_id, needed, None)
            raise
        if not ok:
            raise BudgetExceededError(
                "the request to {} could cost ${:.6f} (input {} tokens, up to {} output tokens); the budget "
                "of ${:.6f} has ${:.6f} spent or held: not sent".format(
                    model, needed, input_tokens, max_output_tokens, self.max_usd, held),
                spent_usd=held, limit_usd=self.max_usd, needed_usd=needed)
        if self._leases is not None:
            self._leases.add(hold_id)
        reservation = Reservation(self, model, needed, tier, batch, priced=True, at=sent)
        reservation.hold_id = hold_id
        return reservation

    def charge(self, usd: float) -> None:
        """Count money spent outside a reservation (e.g. a batch job's result)."""
        amount = _usd(usd, "usd")
        self.store.budget_charge(self.key, amount)

    def _settle(self, held: float, actual: float, hold_id: str = "") -> None:
        self._finish(hold_id, held, actual)

    def _release(self, held: float, hold_id: str = "") -> None:
        self._finish(hold_id, held, None)

    def _finish(self, hold_id: str, held: float, actual: Optional[float]) -> None:
        # (a hold the store no longer has expired and was counted whole: the store puts the difference right;
        # a store that cannot be reached now raises StoreError, and the lease thread keeps the hold renewed and
        # settles it once the store answers: done twice, a settlement counts once)
        try:
            self.store.budget_finish(self.key, hold_id, held, actual)
        except AgentHubError as exc:
            if self._leases is not None and hold_id:
                if getattr(exc, "retryable", False):
                    self._leases.settle_later(hold_id, held, actual)  # (unreachable for now: settled once it answers)
                else:
                    self._leases.discard(hold_id)  # (refused: a corrupt or lost account; the hold expires)
            raise
        if self._leases is not None and hold_id:
            self._leases.discard(hold_id)

    def __reduce__(self) -> Any:
        if self.store.shared:  # a copy in another process draws from the same shared account
            return (_reopen, (self.max_usd, self.allow_unpriced, self.store, self.key))
        raise ConfigError("an agenthub.Budget cannot be copied to another process (its account would split); "
                          "give each process its own Budget, or share one store: Budget(max_usd, store=URL)")

    def __repr__(self) -> str:
        try:
            spent, held, _ = self.store.budget_totals(self.key)
            totals = "spent_usd={:g}, reserved_usd={:g}".format(spent, held)
        except AgentHubError as exc:  # (a repr never raises: logs and tracebacks show it)
            totals = "spent_usd=?, reserved_usd=? (the store cannot answer: {})".format(type(exc).__name__)
        return "Budget(max_usd={:g}, {}{})".format(
            self.max_usd, totals, ", store={!r}, key={!r}".format(self.store.url, self.key)
            if self.store.shared else "")


def _reopen(max_usd: float, allow_unpriced: bool, store: Any, key: str) -> Budget:
    return Budget(max_usd, allow_unpriced, store=store, key=key)


class Reservation(object):
    """The hold of one request on a Budget: ``settle`` it with the turn's usage, or ``release`` it."""

    def __init__(self, budget: Budget, model: str, needed_usd: float, tier: Optional[str], batch: bool,
                 priced: bool, at: Optional[float] = None) -> None:
        self.budget = budget
        self.at = at  # when the request was sent (Unix seconds): the time-of-day tier its turn is priced at
        self.model = model
        self.needed_usd = needed_usd
        self.tier = tier
        self.batch = batch
        self.priced = priced
        self.done = False
        self.hold_id = ""  # the store's name of the hold ("": nothing held, an unpriced model)
        self._lock = threading.Lock()

    def _finish(self) -> bool:
        with self._lock:
            if self.done:
                return False
            self.done = True
            return True

    def settle(self, usage: Optional[Mapping[str, Any]], *,
               cache_writes: Union[None, int, Mapping[str, int]] = None) -> float:
        """Replace the hold by the turn's actual cost (-> USD counted): ``agenthub.cost`` of the usage (the
        cache writes it carries from the wire included, unless ``cache_writes`` says them) at the tier the
        answer says served it (``stream.Usage.service_tier``), else the tier held for, else the tier in
        force when the request was sent.  A turn whose usage cannot be
        priced counts its whole hold: no usage, no count in any bucket, a bucket that is not a token count
        (negative, not an int, absurdly large), no input counted (a request always sends some), or a
        bucket without a price."""
        if not self._finish():
            return 0.0
        actual = 0.0
        if self.priced:
            from .catalog import cost, counted_input

            price = None
            if counted_input(usage):
                try:
                    # (the tier the answer says served it, where it says one, over the tier asked)
                    said = not self.batch and getattr(usage, "service_tier", None) is not None
                    price = cost(self.model, usage, tier=None if said else self.tier, batch=self.batch,
                                 cache_writes=cache_writes, at=self.at)
                except ConfigError:
                    price = None
            actual = self.needed_usd if price is None else price
        self.budget._settle(self.needed_usd, actual, self.hold_id)
        return actual

    def release(self) -> None:
        """Drop the hold: the request failed before any answer."""
        if self._finish():
            self.budget._release(self.needed_usd, self.hold_id)


# -- the client's hook (AutoLLMClient(..., budget=...)) -------------------------------------------

class BudgetHook(AttemptHook):
    """An attempt-loop hook (``agenthub.attempts.AttemptHook``): reserve before the first attempt of a
    stream, settle when the call ends.  Retries of the same call share its one hold, except after an
    attempt the provider accepted (its 2xx head arrived) that then ended without its answer (a cut, an
    idle timeout, an abort): that attempt may have been billed, so its hold is counted whole as that
    attempt's cost (``Attempt.cut_usd`` of the call) and the next attempt, or route, holds its own.  A
    background response's cut is resumed by a GET of the same response (billed once): its hold stays."""

    shares = "budget"  # (agenthub.failover.merge_hooks: one BudgetHook per budget in a call)

    def __init__(self, budget: Budget, embeddings: bool = False) -> None:
        self.budget = budget
        self.embeddings = embeddings  # an embedding model's client: input only, no output to bound
        self._holds = {}  # type: Dict[int, Reservation]
        self._accepted = set()  # type: Set[int]  # attempts whose 2xx head arrived and that are still under way
        self._lock = threading.Lock()
        renew_lock_after_fork(self)

    def before_attempt(self, attempt: Any) -> None:
        if attempt.kind != "stream":
            return
        with self._lock:
            self._accepted.discard(id(attempt))
            if id(attempt) in self._holds:
                return  # a retry, or a background response's resume: the call's hold stands
        config = attempt.config or {}
        if not self.budget.allow_unpriced and offers_image_tool(getattr(attempt.request, "body", None)):
            refused = ConfigError("{}: {}".format(attempt.client_type, IMAGE_TOOL_REFUSED))
            refused.__dict__["_agenthub_refused"] = True  # (nothing sent: a job's row counts no attempt for it)
            raise refused
        limit = 0 if self.embeddings else getattr(attempt.request, "max_output", None)  # the plan's (HttpRequest)
        if limit is None and config.get("max_tokens") is not None:
            limit = config["max_tokens"]
        from_catalog = False
        if limit is None:
            from .catalog import find_model

            row = find_model(attempt.model)
            limit = row.get("max_output") if row else None
            from_catalog = limit is not None
        if limit is None:
            if self.budget.allow_unpriced and worst_case_usd(attempt.model, 0, 0) is None:
                limit = 0
            else:
                raise ConfigError("{}: a budget needs a bound on the output: set config max_tokens (the catalog "
                                  "knows no output limit for {!r})".format(attempt.client_type, attempt.model))
        from .catalog import fast_tier, find_model
        from .estimate import estimate_parts, unknown_media

        # (each audio item read once: the attempt's estimate, which a rate limiter's hook reads too)
        parts = attempt.input_parts() if isinstance(attempt, Attempt) else estimate_parts(attempt.messages or (),
                                                                                              config)
        inputs, heard, unknown = parts
        heard = min(heard, inputs)
        if unknown or unknown_media(attempt.messages or ()):
            # audio whose bytes do not say how long it lasts (a format whose headers agenthub does not read, or
            # audio by URL), a video sent as bytes (its length not read), or a video, a PDF or a YouTube link sent
            # by URL: it may bill up to the model's whole input, so that is held (at the audio price for such audio,
            # else the input price), never a flat guess
            row = find_model(attempt.model)
            window = row.get("context_window") if row else None
            if isinstance(window, int) and window > inputs:
                if unknown:
                    heard += window - inputs
                inputs = window
        started = getattr(getattr(attempt, "call", None), "started_ms", None)
        try:
            hold = self.budget.reserve(attempt.model, inputs, int(limit),
                                       tier=fast_tier(attempt.model) if config.get("fast_mode") else getattr(
                                           attempt, "tier", None),
                                       prompt_caching=config.get("prompt_caching"),
                                       at=started / 1000.0 if isinstance(started, int) else None,
                                       audio_tokens=heard)
        except BudgetExceededError as exc:
            if not from_catalog:
                raise
            # the hold is the model's whole output limit because nothing bounds the answer: say how to hold less
            raise BudgetExceededError(
                "{}; max_tokens is not set, so the whole output limit of {} ({} tokens) is held: set max_tokens "
                "to hold less".format(exc, attempt.model, int(limit)), spent_usd=exc.spent_usd,
                limit_usd=exc.limit_usd, needed_usd=exc.needed_usd) from None
        with self._lock:
            self._holds[id(attempt)] = hold

    def after_response(self, attempt: Any) -> None:
        if attempt.kind == "stream" and attempt.status is not None and 200 <= attempt.status < 300:
            with self._lock:
                self._accepted.add(id(attempt))  # the provider took the request: from here on it may bill it

    def on_error(self, attempt: Any, error: Any) -> None:
        if not self._cut(attempt, error):
            return
        with self._lock:
            self._accepted.discard(id(attempt))
            hold = self._holds.pop(id(attempt), None)
        if hold is not None:  # counted whole, as this attempt's own cost; the next attempt holds anew
            _cut_cost(attempt, hold.settle(_billed(error)))

    def _cut(self, attempt: Any, error: Any) -> bool:
        """Did ``attempt`` end without its answer after the provider accepted it (billed, for an unknown sum)?
        Not when the provider said it failed (an error event or document: an UpstreamError), nor for a
        background response whose id is known (its stream is resumed, the response billed once)."""
        from .errors import UpstreamError

        with self._lock:
            accepted = id(attempt) in self._accepted
        if not accepted or isinstance(error, UpstreamError):
            return False
        return not (attempt.resuming or attempt.response_id or attempt.call.response_id)

    def on_done(self, attempt: Any) -> None:
        with self._lock:
            hold = self._holds.pop(id(attempt), None)
            accepted = id(attempt) in self._accepted
            self._accepted.discard(id(attempt))
        if hold is None:
            return
        from .errors import UpstreamError

        # a background response, created upstream, runs on (billed) unless the provider said on its own stream that
        # it failed (a declared error, as for any stream: unbilled); a reconnect's failure leaves it running
        created = bool((attempt.config or {}).get("background") and (attempt.response_id or attempt.call.response_id)
                       and not (isinstance(attempt.error, UpstreamError) and not attempt.resuming))
        if attempt.usage is not None:
            hold.settle(attempt.usage)
        elif attempt.delivered or created or (accepted and not isinstance(attempt.error, UpstreamError)):
            # cut, aborted or closed after the provider took it (a background response, created, runs on):
            # what it used is unknown, its hold counts
            charged = hold.settle(_billed(attempt.error))  # (a turn finished with nothing to keep: its usage)
            if not attempt.delivered and not created:
                _cut_cost(attempt, charged)
        else:
            hold.release()  # failed before the provider took it, or the provider said it failed: nothing billed


#: why a Budget (without allow_unpriced) refuses a request offering OpenAI's image_generation tool
IMAGE_TOOL_REFUSED = ("a budget cannot bound a request that may call OpenAI's image_generation tool (its images are "
                      "billed apart, at the image model's rates; no usage counts them, and a turn may make several): "
                      "remove the tool, or pass Budget(max_usd, allow_unpriced=True) to let its images run uncounted "
                      "(the rest of the turn is held, and the turn settled at its whole hold)")


def offers_image_tool(body: Any) -> bool:
    """Whether a request body (the planned request's, config and ``extra_body`` merged; or an ``extra_body``) offers
    the model OpenAI's ``image_generation`` built-in tool (a Responses request's ``tools``)."""
    tools = body.get("tools") if isinstance(body, Mapping) else None
    return isinstance(tools, (list, tuple)) and any(
        isinstance(tool, Mapping) and tool.get("type") == "image_generation" for tool in tools)


def _billed(error: Any) -> Optional[Mapping[str, Any]]:
    """The usage of a turn that ended without an answer but whose usage came with it (an EmptyResponseError: the
    provider finished it, and billed it, with nothing to keep): what it is settled at, instead of its whole hold;
    None for a cut (what was billed is unknown)."""
    from .errors import EmptyResponseError

    usage = getattr(error, "usage_metadata", None) if isinstance(error, EmptyResponseError) else None
    return usage if isinstance(usage, Mapping) else None


def _cut_cost(attempt: Any, usd: float) -> None:
    """Add ``usd`` to the logical call's ``cut_usd``: what attempts that brought no answer were counted."""
    call = attempt.call
    call.cut_usd = (call.cut_usd or 0.0) + usd
    if attempt is not call:
        attempt.cut_usd = (attempt.cut_usd or 0.0) + usd
