"""What the script does when a run raises, as Lightning's `_call_and_handle_interrupt` does around fit, validate,
test and predict: the trainer's status becomes "interrupted", each callback's `on_exception` runs (Lightning's
order), then the datamodule's (2.x), then the loggers end their runs as failed (MLflow's run marked FAILED); the
error is raised again, except a KeyboardInterrupt, after which the script says so in Lightning's words and exits
with status 1 (Lightning 2.x exits so; 1.9.5's fit returns)."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.plan.hooks import Hooks
from loopgen.plan.loggers import Logging


@dataclass(frozen=True)
class Failure:
    calls_callbacks: bool  # a callback defines on_exception
    calls_data: bool  # the datamodule defines on_exception (Lightning 2.x calls it)
    ends_loggers: bool  # a logger's run ends as failed (MLflow's)
    keyboard_message: str  # what Lightning says after a KeyboardInterrupt

    @property
    def handles(self) -> bool:
        """main() catches what fit raises: something runs before the error goes on."""
        return self.calls_callbacks or self.calls_data or self.ends_loggers


def resolve_failure(hooks: Hooks, logging: Logging, follows_1_9_5: bool) -> Failure:
    return Failure(
        calls_callbacks=bool(hooks.callbacks_with("on_exception")),
        calls_data=hooks.data_has("on_exception"),
        ends_loggers=logging.fails is not None,
        keyboard_message=(
            "Detected KeyboardInterrupt, attempting graceful shutdown..."
            if follows_1_9_5
            else "\nDetected KeyboardInterrupt, attempting graceful shutdown ..."
        ),
    )
