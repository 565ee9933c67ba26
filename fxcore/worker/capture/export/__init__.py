"""The ``export`` capture mode: non-strict ``torch.export.export`` on meta inputs
(``exporting``), recovering from data-dependent guards (``guesses``), its failures sorted into
codes FX401-FX499 (``failures``) and its exported graph read for the editor (``graph``)."""
