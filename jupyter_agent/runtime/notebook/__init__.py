"""The person's files and notebooks: the in-cell ``notebook`` app, proposals, live (RTC)
documents, the contents manager, exports and safe contents paths. May import core/notebook,
the store. Used by the driver, the assembly and the server's routes.
"""
