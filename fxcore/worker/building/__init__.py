"""Building the instance a class is captured as: the order of argument sources
(``instances``), construction on the meta device (``construction``) and without weights
(``weights``)."""
