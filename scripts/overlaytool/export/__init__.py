"""The checkout back to patches: `edit` (the series as commits), `refresh` and the commit export."""
