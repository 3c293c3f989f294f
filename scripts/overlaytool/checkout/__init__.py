"""A target's checkout, below what `apply` writes into it (tree/), the export (export/) and the
rebase (rebase/): its git directory, the tool's state and lock in it (gitdir), the clone that makes
it (clone), git's own `index.lock` in it (gitlocks), and a pin whose tree overlaps another target's
checkout or the overlay (overlap)."""
