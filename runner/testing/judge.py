"""The LLM-as-judge check: a model grades the answer against the case's rubric.

Built on LangChain's `openevals` (`create_llm_as_judge` with `continuous=True`): it asks the judge
model for structured output, a score from 0 to 1 and its reasoning, through the model's own
`with_structured_output`, so any chat model agentctl can create serves as a judge (a `replay:`
cassette too, which is how the offline tests grade). It is the `eval` extra:
`pip install 'agentctl[eval]'`.

Without a judge model the check is skipped, never passed.
"""

from __future__ import annotations

from typing import Any

from runner.errors import ResolutionError, RunnerError
from runner.testing.expectations import Check, Observed
from runner.testing.spec import JudgeExpect

__all__ = ["JUDGE_PROMPT", "Judge"]

JUDGE_PROMPT = """\
You grade the answer of an AI agent against a rubric.

<rubric>
{rubric}
</rubric>

<conversation>
{inputs}
</conversation>

<answer>
{outputs}
</answer>

Score how well the answer meets the rubric, from 0.0 (not at all) to 1.0 (fully).
"""


class Judge:
    """Grades `judge:` checks with the model named by the check, the command line or the file
    (in that order); skips them when none is named."""

    def __init__(self, *, model: str | None, file_model: str | None) -> None:
        self.cli_model = model
        self.file_model = file_model
        self._models: dict[str, Any] = {}

    def model_for(self, expect: JudgeExpect) -> str | None:
        return expect.model or self.cli_model or self.file_model

    def __call__(self, expect: JudgeExpect, seen: Observed) -> Check:
        at = "expect.judge"
        model_id = self.model_for(expect)
        if model_id is None:
            return Check(
                at,
                "skipped",
                "no judge model: pass --judge-model MODEL or set `judge_model:` in the file",
            )
        if seen.final is None and seen.structured is None:
            return Check(at, "failed", "there is no final answer to grade")
        try:
            score, reason = self._grade(model_id, expect.rubric, seen)
        except RunnerError as exc:  # no openevals, a model that cannot be made, no cassette
            return Check(at, "failed", f"the judge could not run: {exc}")
        except Exception as exc:  # the judge model failed: the check did not pass
            return Check(at, "failed", f"the judge model failed: {type(exc).__name__}: {exc}")
        verdict = f"score {score:.2f} (threshold {expect.threshold:.2f}): {reason}"
        if score >= expect.threshold:
            return Check(at, "passed", verdict)
        return Check(
            at,
            "failed",
            f"the judge scored {score:.2f}, below {expect.threshold:.2f}: {reason}",
            f"a score of at least {expect.threshold:.2f} for: {expect.rubric.strip()}",
            f"{score:.2f}",
        )

    def _grade(self, model_id: str, rubric: str, seen: Observed) -> tuple[float, str]:
        try:
            from openevals.llm import create_llm_as_judge
        except ImportError:
            raise ResolutionError(
                "the judge needs openevals, which is not installed: pip install 'agentctl[eval]'"
            ) from None
        evaluator = create_llm_as_judge(
            prompt=JUDGE_PROMPT.replace("{rubric}", _escape(rubric.strip())),
            judge=self._model(model_id),
            continuous=True,
            feedback_key="rubric",
        )
        import json

        answer = (
            json.dumps(seen.structured, ensure_ascii=False)
            if seen.structured is not None
            else seen.final
        )
        conversation = "\n\n".join(f"user: {text}" for text in seen.inputs)
        result: Any = evaluator(inputs=conversation, outputs=answer)
        score = float(result["score"])
        if not 0 <= score <= 1:
            raise ValueError(f"the judge's score {score} is not between 0 and 1")
        return score, str(result.get("comment") or "").strip() or "(no reason given)"

    def _model(self, model_id: str) -> Any:
        if model_id not in self._models:
            from runner.agent.models import init_model
            from runner.spec.model import _check_model_id

            try:
                model_id = _check_model_id(model_id)
            except ValueError as exc:
                raise ResolutionError(f"judge model: {exc}") from None
            self._models[model_id] = init_model(model_id, agent="judge", is_main=True)
        return self._models[model_id]


def _escape(text: str) -> str:
    """The rubric goes into a `str.format` template (openevals fills `{inputs}`, `{outputs}`)."""
    return text.replace("{", "{{").replace("}", "}}")
