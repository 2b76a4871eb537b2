"""The `model:` key: which chat model runs the agent, with its parameters and fallbacks.

The short form `model: openai:gpt-4.1` equals `model: {id: openai:gpt-4.1}`. The provider prefix is
required (explicit beats inferred in a file under version control); a bare model name gets a
"did you mean" with the provider it most likely belongs to.
"""

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from runner.spec.base import SpecModel, describe, empty_list, shorthand
from runner.spec.budgets import PriceSpec

# The providers `langchain.chat_models.init_chat_model` knows, plus agentctl's own `replay`.
# tests/spec/test_providers.py fails when langchain's list changes, so this list stays in sync.
KNOWN_PROVIDERS: tuple[str, ...] = (
    "anthropic",
    "anthropic_bedrock",
    "azure_ai",
    "azure_openai",
    "baseten",
    "bedrock",
    "bedrock_converse",
    "bedrock_mantle_anthropic",
    "bedrock_mantle_openai",
    "cohere",
    "deepseek",
    "fireworks",
    "google_anthropic_vertex",
    "google_genai",
    "google_vertexai",
    "groq",
    "huggingface",
    "ibm",
    "langsmith",
    "litellm",
    "meta",
    "mistralai",
    "nvidia",
    "ollama",
    "openai",
    "openrouter",
    "perplexity",
    "together",
    "upstage",
    "xai",
    "replay",
)

_NAME_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "o1", "o3", "o4", "chatgpt", "text-", "davinci"), "openai"),
    (("claude",), "anthropic"),
    (("gemini",), "google_genai"),
    (("command",), "cohere"),
    (("mistral", "mixtral", "codestral"), "mistralai"),
    (("deepseek",), "deepseek"),
    (("grok",), "xai"),
    (("sonar",), "perplexity"),
    (("llama", "qwen", "phi", "gemma"), "ollama"),
)


def guess_provider(model_name: str) -> str | None:
    """The provider a bare model name most likely belongs to, for a "did you mean"."""
    lowered = model_name.lower()
    for prefixes, provider in _NAME_HINTS:
        if lowered.startswith(prefixes):
            return provider
    return None


def check_model_id(value: str) -> str:
    """`value` when it is a `provider:model` id of a known provider; else `ValueError` saying
    what is wrong with it (and the id it may have meant)."""
    return _check_model_id(value)


def _check_model_id(value: str) -> str:
    provider, sep, name = value.partition(":")
    if not sep or not provider or not name:
        hint = guess_provider(value)
        fix = f"; did you mean '{hint}:{value}'?" if hint else ""
        slash_provider, slash, slash_name = value.partition("/")
        if slash and slash_provider in KNOWN_PROVIDERS and slash_name:
            fix = f"; did you mean '{slash_provider}:{slash_name}'?"
        raise ValueError(
            f"expected 'provider:model', e.g. 'openai:gpt-4.1' or 'replay:cassette.yaml', "
            f"found {describe(value)}{fix}"
        )
    if provider not in KNOWN_PROVIDERS:
        import difflib

        close = difflib.get_close_matches(provider, KNOWN_PROVIDERS, n=1, cutoff=0.6)
        fix = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(KNOWN_PROVIDERS)}"
        raise ValueError(f"unknown model provider {provider!r}{fix}")
    return value


_model_shorthand = shorthand("id", str, "'provider:model' or a mapping with `id`")


class FallbackModelSpec(SpecModel):
    """A model tried when the ones before it fail."""

    id: str
    """`provider:model`, e.g. `anthropic:claude-sonnet-4-5`."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the provider's chat model class (temperature, max_tokens, ...)."""
    price: PriceSpec | None = None
    """`{input, output}` in USD per million tokens: for `limits.cost` and the cost shown."""

    _check_id = field_validator("id")(classmethod(lambda cls, v: _check_model_id(v)))


FallbackModelInput = Annotated[
    FallbackModelSpec,
    BeforeValidator(_model_shorthand, json_schema_input_type=str | FallbackModelSpec),
]


def _split_provider(value: Any) -> Any:
    """`{provider: openai, name: gpt-4.1}` (how other tools write it) is one mistake, not three."""
    if isinstance(value, dict) and "id" not in value and "provider" in value:
        name = next((value[k] for k in ("name", "model") if k in value), "MODEL")
        raise ValueError(
            f"write the provider and the model together as `id: {value['provider']}:{name}`, "
            "not as separate keys"
        )
    return value


class ModelSpec(SpecModel):
    """A chat model: `provider:model`, its parameters, fallbacks and context window."""

    @model_validator(mode="before")
    @classmethod
    def _provider_key(cls, value: Any) -> Any:
        return _split_provider(value)

    id: str
    """`provider:model`, e.g. `openai:gpt-4.1`, `ollama:llama3.1`, or `replay:cassette.yaml`
    to play back a recorded cassette (the path is relative to this file)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the provider's chat model class: temperature, max_tokens, base_url,
    timeout, max_retries, api_key (use `${ENV_VAR}`, never a literal key)."""
    fallbacks: list[FallbackModelInput] = Field(default_factory=empty_list)
    """Models tried in order when a call to this one raises."""
    context_window: int | None = Field(default=None, gt=0)
    """The model's input limit in tokens; sets the summarization defaults (85% / 10%)."""
    price: PriceSpec | None = None
    """`{input, output}` in USD per million tokens: `limits.cost` needs it, and `usage` events
    and the terminal show each run's cost with it."""
    images: bool | None = None
    """Whether the model can look at images that tools return (`read_file` on a PNG, JPEG, GIF
    or WebP) and images attached to a message (`agentctl run --attach`). Default: what the
    provider's model profile says (`image_tool_message`), else false; without it `read_file`
    answers that the file is an image it cannot show, and `--attach` refuses images."""
    parse_text_tool_calls: bool = False
    """Run a tool call the model wrote out as its reply's text (`<tool_call>{"name": ...,
    "arguments": {...}}</tool_call>`, `<tools>...</tools>`, or a fenced JSON block naming one
    of the agent's tools) when the server did not turn it into a call, as small local models
    on some servers do. Off: such a reply ends the run as the answer, with a warning."""

    _check_id = field_validator("id")(classmethod(lambda cls, v: _check_model_id(v)))

    def prices(self) -> dict[str, PriceSpec]:
        """Model id -> price, for this model and those of its fallbacks that have one (what a
        reply is priced by: `runner.middleware.budgets.price_for`)."""
        found = {self.id: self.price} if self.price is not None else {}
        found.update({f.id: f.price for f in self.fallbacks if f.price is not None})
        return found


ModelInput = Annotated[
    ModelSpec,
    BeforeValidator(_model_shorthand, json_schema_input_type=str | ModelSpec),
]
