"""The compile: one ordered table of steps from a spec and its settings to Artifacts (compiler), the
name of a failure's stage and line (failures), the cache of dump folders (cache), and a job turned into
a published dump folder (dump)."""
