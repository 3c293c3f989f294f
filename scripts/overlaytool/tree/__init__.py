"""What `apply` writes into a checkout: the series index, the write plan and its journal, the files,
the stamp, and where StreamPETR's code sits in it (layout). Below it: the checkout itself
(checkout/); above it: the export (export/) and the rebase (rebase/)."""
