"""The AGENTBENCH_OPENAI_* environment -> an OpenAI-compatible chat client, token prices, and API failures as Claude-style sentences."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import anyio
import openai

BASE_URL_VARIABLE = "AGENTBENCH_OPENAI_BASE_URL"
API_KEY_VARIABLE = "AGENTBENCH_OPENAI_API_KEY"
TIMEOUT_VARIABLE = "AGENTBENCH_OPENAI_TIMEOUT_S"
MAX_RETRIES_VARIABLE = "AGENTBENCH_OPENAI_MAX_RETRIES"
MAX_TOKENS_VARIABLE = "AGENTBENCH_OPENAI_MAX_TOKENS"
TEMPERATURE_VARIABLE = "AGENTBENCH_OPENAI_TEMPERATURE"
# USD per million tokens; cost is reported only when the input and output prices are both set.
PRICE_INPUT_VARIABLE = "AGENTBENCH_OPENAI_PRICE_INPUT_PER_MTOK"
PRICE_OUTPUT_VARIABLE = "AGENTBENCH_OPENAI_PRICE_OUTPUT_PER_MTOK"
PRICE_CACHED_VARIABLE = "AGENTBENCH_OPENAI_PRICE_CACHED_INPUT_PER_MTOK"

DEFAULT_TIMEOUT_S = 120.0
# Retries are the client's own loop (the SDK's max_retries is 0), so each one is reported:
# connection errors and 408/409/429/5xx; a timeout is the agent's to retry (without thinking).
DEFAULT_MAX_RETRIES = 2
#: Sent unless AGENTBENCH_OPENAI_MAX_TOKENS says otherwise: a think longer than this comes back
#: cut off (finish reason `length`, empty) well before the deadline, and is retried without thinking.
DEFAULT_MAX_TOKENS = 2048
RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
_MAX_WAIT_S = 60.0
#: Request parameters only some servers accept (vLLM's); a 400 that names one drops it for good.
SERVER_SPECIFIC = ("skip_special_tokens", "chat_template_kwargs")
#: The switch that turns a GLM-style chat template's thinking off for one request (vLLM).
THINKING_OFF = {"chat_template_kwargs": {"enable_thinking": False}}


class EndpointConfigError(Exception):
    """The endpoint environment is missing or malformed; the message names the variable and what was expected."""


class ApiFailure(Exception):
    """A request that failed for good (after the SDK's retries): `message` is Claude Code's `API Error: ...` text."""

    def __init__(self, message: str, status: int | None, *, timed_out: bool = False, retries: tuple[dict[str, Any], ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.timed_out = timed_out
        self.retries = retries


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float

    def cost(self, usage: Mapping[str, int]) -> float:
        """The cost of result-style usage counters (`input_tokens` excludes cache reads)."""
        total = (
            usage.get("input_tokens", 0) * self.input
            + usage.get("cache_read_input_tokens", 0) * self.cached_input
            + usage.get("output_tokens", 0) * self.output
        )
        return round(total / 1_000_000, 10)


def _number(environ: Mapping[str, str], name: str, default: float | None, *, minimum: float, integer: bool = False) -> float | None:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise EndpointConfigError(f"{name}={raw!r} is not {kind}") from None
    if not math.isfinite(value) or value < minimum:
        raise EndpointConfigError(f"{name}={raw!r} must be at least {minimum:g}")
    return value


def endpoint_identity(base_url: str) -> str:
    """`scheme://host[:port]` of a base URL: never its path, user or password."""
    try:
        parts = urlsplit(base_url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "an unparseable base URL"
    return f"{parts.scheme}://{(parts.hostname or '').lower()}{port}"


@dataclass(frozen=True)
class EndpointConfig:
    """Where the model is served and how requests are made."""

    base_url: str
    api_key: str | None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    pricing: Pricing | None = None
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    temperature: float | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> EndpointConfig:
        """Read the `AGENTBENCH_OPENAI_*` variables.

        Raises:
            EndpointConfigError: The base URL is missing or not http(s), or a number is malformed.
        """
        base_url = (environ.get(BASE_URL_VARIABLE) or "").strip()
        if not base_url:
            raise EndpointConfigError(
                f"{BASE_URL_VARIABLE} is not set: set it to the OpenAI-compatible server's base URL, "
                "for example http://127.0.0.1:8077/v1"
            )
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise EndpointConfigError(f"{BASE_URL_VARIABLE} must be an http:// or https:// URL, got {endpoint_identity(base_url)}")
        input_price = _number(environ, PRICE_INPUT_VARIABLE, None, minimum=0)
        output_price = _number(environ, PRICE_OUTPUT_VARIABLE, None, minimum=0)
        if (input_price is None) != (output_price is None):
            raise EndpointConfigError(f"set both {PRICE_INPUT_VARIABLE} and {PRICE_OUTPUT_VARIABLE}, or neither")
        pricing = None
        if input_price is not None and output_price is not None:
            cached = _number(environ, PRICE_CACHED_VARIABLE, input_price, minimum=0)
            pricing = Pricing(input_price, output_price, float(cached))  # type: ignore[arg-type]
        max_tokens = _number(environ, MAX_TOKENS_VARIABLE, DEFAULT_MAX_TOKENS, minimum=1, integer=True)
        return cls(
            base_url=base_url,
            api_key=environ.get(API_KEY_VARIABLE) or None,
            timeout_s=float(_number(environ, TIMEOUT_VARIABLE, DEFAULT_TIMEOUT_S, minimum=0.001)),  # type: ignore[arg-type]
            max_retries=int(_number(environ, MAX_RETRIES_VARIABLE, DEFAULT_MAX_RETRIES, minimum=0, integer=True)),  # type: ignore[arg-type]
            pricing=pricing,
            max_tokens=int(max_tokens),  # type: ignore[arg-type]
            temperature=_number(environ, TEMPERATURE_VARIABLE, None, minimum=0),
        )

    @property
    def identity(self) -> str:
        """The non-secret endpoint identity (`scheme://host:port`)."""
        return endpoint_identity(self.base_url)


@dataclass(frozen=True)
class Reply:
    """One chat completion's message and usage, in plain values."""

    content: str
    reasoning: str
    tool_calls: list[dict[str, Any]]
    model: str
    finish_reason: str | None
    # Result-style counters: input_tokens (uncached), cache_read_input_tokens, output_tokens;
    # empty when the server sent no usage (the counts are unknown, not 0).
    usage: dict[str, int] = field(default_factory=dict)
    #: The call on the record: when it started (UTC), how long it took, the retries before it.
    started_at: str = ""
    duration_ms: int = 0
    retries: tuple[dict[str, Any], ...] = ()
    #: `closed` / `unclosed` when `<think>` text was taken out of the content (no reasoning parser).
    thinking_in_content: str | None = None

    @property
    def usage_known(self) -> bool:
        """Whether the server said how many tokens the call used."""
        return bool(self.usage)

    def record(self) -> dict[str, Any]:
        """The call as the `model-call` report records it (token counts None when unknown)."""
        return {
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "prompt_tokens": (self.usage.get("input_tokens", 0) + self.usage.get("cache_read_input_tokens", 0)) if self.usage else None,
            "completion_tokens": self.usage.get("output_tokens") if self.usage else None,
            "finish_reason": self.finish_reason,
            "retries": [dict(retry) for retry in self.retries],
        }

    @property
    def empty(self) -> bool:
        """No content and no tool call: what a `<think>` block that never closed leaves (seed 004)."""
        return not self.tool_calls and not self.content.strip()


def _usage(raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return {
        "input_tokens": max(prompt - cached, 0),
        "cache_read_input_tokens": cached,
        "output_tokens": int(getattr(raw, "completion_tokens", 0) or 0),
    }


def _error_detail(body: Any) -> str:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("message"):
            return str(body["message"])
        if body.get("detail"):
            return str(body["detail"])
    return str(body) if body else ""


def _retry_after(response: Any) -> float | None:
    # Retry-After in seconds (the HTTP-date form is rare on model servers and read as absent).
    try:
        raw = response.headers.get("retry-after-ms")
        if raw:
            return max(float(raw) / 1000, 0.0)
        raw = response.headers.get("retry-after")
        return max(float(raw), 0.0) if raw else None
    except (AttributeError, ValueError, TypeError):
        return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: on_retry(status or None, wait seconds, the sentence); on_drop(parameter, the server's sentence).
RetryHook = Callable[[int | None, float, str], None]
DropHook = Callable[[str, str], None]


class ChatClient:
    """Chat completions against one endpoint with the official `openai` client; failures become ApiFailure.

    The client's own retries are off (`max_retries=0`): this loop retries connection errors and
    408/409/429/5xx up to `max_retries` times (honouring Retry-After) and tells `on_retry` about
    each, and every call has one total deadline (`timeout_s`), however slowly the body trickles.
    """

    def __init__(self, config: EndpointConfig, *, on_retry: RetryHook | None = None, on_drop: DropHook | None = None,
                 sleep: Callable[[float], Any] | None = None) -> None:
        self.config = config
        self.on_retry = on_retry
        self.on_drop = on_drop
        self._sleep = sleep or anyio.sleep
        self.dropped: set[str] = set()
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            # vLLM without --api-key accepts any key, but the SDK needs one to be set.
            api_key=config.api_key or "none",
            timeout=config.timeout_s,
            max_retries=0,
        )

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def _safe(self, text: str) -> str:
        # A server that echoes the request headers must not put the key into a transcript.
        if self.config.api_key:
            text = text.replace(self.config.api_key, "***")
        return " ".join(text.split())

    def _failure(self, exc: Exception) -> ApiFailure:
        if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
            return ApiFailure(
                f"API Error: Request timed out: no reply from {self.config.identity} within {self.config.timeout_s:g}s", None,
                timed_out=True,
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return ApiFailure(
                f"API Error: Connection error: could not reach {self.config.identity} ({self._safe(str(cause) or type(cause).__name__)})",
                None,
            )
        if isinstance(exc, openai.APIStatusError):
            detail = self._safe(_error_detail(exc.body) or exc.response.reason_phrase or "")
            return ApiFailure(f"API Error: {exc.status_code} {detail}".rstrip(), exc.status_code)
        return ApiFailure(f"API Error: {self._safe(str(exc))}", None)

    def _named_parameter(self, exc: Exception, extra_body: Mapping[str, Any]) -> str | None:
        """The server-specific parameter a 400 names, if it names one this request sent."""
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
            return None
        detail = f"{_error_detail(exc.body)} {exc.message}"
        return next((name for name in extra_body if name in SERVER_SPECIFIC and name in detail), None)

    async def complete(self, *, model: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], thinking: bool) -> Reply:
        """One chat completion, retried as the class says.

        Args:
            model: The served model name (`--model`).
            messages: The conversation so far.
            tools: Function tool definitions.
            thinking: False adds `chat_template_kwargs.enable_thinking = false` to the request.

        Raises:
            ApiFailure: The request failed for good (status None when no response came;
                `timed_out` when the deadline passed).
        """
        options: dict[str, Any] = {}
        if self.config.max_tokens is not None:
            options["max_tokens"] = self.config.max_tokens
        if self.config.temperature is not None:
            options["temperature"] = self.config.temperature
        retries: list[dict[str, Any]] = []
        started_at, clock = _now(), time.monotonic()
        while True:
            # vLLM's tool parsers read the special tokens; the server must not strip them.
            extra_body: dict[str, Any] = {"skip_special_tokens": False}
            if not thinking:
                extra_body.update(THINKING_OFF)
            extra_body = {key: value for key, value in extra_body.items() if key not in self.dropped}
            try:
                with anyio.fail_after(self.config.timeout_s):
                    response = await self._client.chat.completions.create(
                        model=model, messages=list(messages), tools=list(tools), tool_choice="auto", extra_body=extra_body,
                        **options,
                    )
                break
            except (openai.OpenAIError, TimeoutError) as exc:
                named = self._named_parameter(exc, extra_body)
                if named is not None:
                    self.dropped.add(named)
                    if self.on_drop is not None:
                        self.on_drop(named, self._failure(exc).message)
                    continue
                failure = self._failure(exc)
                retryable = not failure.timed_out and (failure.status is None or failure.status in RETRYABLE_STATUSES)
                if not retryable or len(retries) >= self.config.max_retries:
                    failure.retries = tuple(retries)
                    raise failure from None
                response_obj = getattr(exc, "response", None)
                wait = _retry_after(response_obj) if response_obj is not None else None
                wait = min(wait if wait is not None else _BACKOFF_S[min(len(retries), len(_BACKOFF_S) - 1)], _MAX_WAIT_S)
                retries.append({"status": failure.status, "wait_s": round(wait, 3), "error": failure.message})
                if self.on_retry is not None:
                    self.on_retry(failure.status, wait, failure.message)
                await self._sleep(wait)
        if not response.choices:
            raise ApiFailure(f"API Error: the reply from {self.config.identity} has no choices", None)
        choice = response.choices[0]
        message = choice.message.model_dump()
        reasoning = message.get("reasoning") or message.get("reasoning_content") or ""
        return Reply(
            content=message.get("content") or "",
            reasoning=str(reasoning),
            tool_calls=[dict(call) for call in message.get("tool_calls") or []],
            model=response.model or model,
            finish_reason=choice.finish_reason,
            usage=_usage(response.usage),
            started_at=started_at,
            duration_ms=int((time.monotonic() - clock) * 1000),
            retries=tuple(retries),
        )


#: How long the check before collection waits for the model server to answer.
PROBE_TIMEOUT_S = 5.0


def endpoint_problem(config: EndpointConfig, model: str | None, *, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the model server cannot carry a session, checked once before any run; None when it can.

    `GET {base_url}/models`: no answer at all (refused, unknown host, timeout) is a problem naming
    the URL; any HTTP answer means a server listens. When it lists its models (OpenAI's
    `{"data": [{"id": ...}]}`) and `model` is not among them, that is a problem too. A server
    without the listing (404, another shape) is not refused: the runs will say what it does.
    """
    import json
    import urllib.error
    import urllib.request

    url = config.base_url.rstrip("/") + "/models"
    where = endpoint_identity(config.base_url)
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {config.api_key}"} if config.api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - the operator's own model URL
            body = answer.read(1_000_000)
    except urllib.error.HTTPError:
        return None  # a server answered; it just has no listing here
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return (f"the model server at {where} ({BASE_URL_VARIABLE}) does not answer: {reason}; start it, or fix the URL "
                "(every run would end incomplete otherwise)")
    try:
        listed = [str(entry.get("id")) for entry in json.loads(body).get("data", []) if isinstance(entry, dict)]
    except (ValueError, AttributeError):
        return None
    if model and listed and model not in listed:
        shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
        return f"the model server at {where} ({BASE_URL_VARIABLE}) does not serve the model {model!r} (--model); it serves: {shown}"
    return None
