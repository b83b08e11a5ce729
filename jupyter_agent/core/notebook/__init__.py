"""The person's notebook as the model sees it and the edits it proposes: the notebook digest,
proposals and their edits (pure). Imports core/digest and core/ base modules. Used by
runtime/notebook and the in-cell notebook app's results.
"""
