"""Building the instance a class is captured as: the order of argument sources
(``sources``), construction on the meta device (``construction``) and without weights
(``weights``)."""
