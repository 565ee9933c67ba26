"""What the stages of one job hand one another, below the stages: the job's context
(``job_context``: configuration, parsed sources, located failures), the capture target each
stage reads and the record a capture makes (``capture_target``), what the inputs stage decides
for an instance, as the one value the pipeline passes to each capture (``inputs_decision``),
with what ``forward`` raised on the inputs tried (``input_refusals``) and whether such an error
depends on the inputs at all (``input_independence``), and the failures that only follow from
how a capture recovered from an earlier one (``consequences``)."""
