"""Whether a run is traced: `--otel`, or an OTLP endpoint variable, unless the SDK is disabled.

Apart from `runner.run.telemetry`, which makes the spans, so that deciding to trace nothing (every
run without `--otel` or an endpoint) does not import the tracer and its LangChain callback handler.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["ENDPOINT_VARIABLES", "requested"]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""Either one set turns tracing on without `--otel` (as any OpenTelemetry SDK does)."""


def requested(flag: bool, env: Mapping[str, str] | None = None) -> bool:
    """Whether to trace: `--otel`, or an OTLP endpoint variable; `OTEL_SDK_DISABLED=true` wins
    over both, as the SDK's specification says."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return flag or any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)
