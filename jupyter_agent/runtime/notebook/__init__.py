"""The person's files and notebooks: the in-cell ``notebook`` app, proposals, live (RTC)
documents, the contents manager, exports (and a chat imported from one) and safe contents
paths. May import core/notebook, the store. Used by the driver, the assembly and the
server's routes.
"""
