"""A sweep's results: the figures over the repeats and the ratios against their targets
(:mod:`.figures`), and the printed tables, the PNG chart and the JSON file (:mod:`.outputs`)."""
