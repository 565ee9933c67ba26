"""The ``nn.Module`` mode, ``model.train()`` or ``model.eval()``, a class is judged in
(``judging``): whether its two modes can differ (``training_branches``, followed call by call:
``call_reach``, ``code_names``), switching between them (``mode_switch``) and one verdict of
two (``mode_verdicts``). Beside the devices on the rooms below the stages: the pipeline and
the capture stage use it."""
