"""BytePS compatibility: `import byteps.torch as bps` runs on Caravan.

Every name is the caravan.torch object itself; see docs/byteps-migration.md
for what is identical and what differs.
"""
