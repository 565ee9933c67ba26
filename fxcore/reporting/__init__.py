"""From results to a report: parent verdicts, class notes, suppressions applied, the editor's
phases."""
