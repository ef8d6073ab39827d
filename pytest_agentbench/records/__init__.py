"""The frozen records that cross a stage boundary (Run -> Audit -> BaselineComparison -> RunResult -> SessionResult) and their only JSON forms.

They sit above the stages that make their parts (suite, device, servers, checks) and below
every stage that passes a run along (run, audit, baseline, report, the pipeline and the glue).
"""

from pytest_agentbench.records.audit import Audit, Stumble, Verdict
from pytest_agentbench.records.comparison import BaselineComparison, ComparabilityFlag, DiffLine, MetricRow, Snippet
from pytest_agentbench.records.result import Fingerprints, Rerendered, RunResult, SessionResult
from pytest_agentbench.records.run import AuditInputs, DeviceState, ProcessOutcome, Run, ScreenSnapshot

__all__ = [
    "Audit", "AuditInputs", "BaselineComparison", "ComparabilityFlag", "DeviceState", "DiffLine", "Fingerprints",
    "MetricRow", "ProcessOutcome", "Rerendered", "Run", "RunResult", "ScreenSnapshot", "SessionResult", "Snippet",
    "Stumble", "Verdict",
]
