"""Memory and recall as pure data and programs: memory records, the recall ranking (lexical,
hybrid), its terms, the autorecall program, and what looks like a credential. Pure; imports
core/ base modules. Used by the loop, runtime/memory and store/memory.
"""
