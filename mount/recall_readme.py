"""recall/README.md: what recall/ is, for whoever lists it or searches it with grep or rg.

An agent that types `grep -r deploy recall/` or `rg deploy recall/` expects recall/ to search memory. It
cannot: recall/ lists recent queries as links (so that a walk of the mount sees each memory once), and
grep -r and rg do not follow links below the directory they are given. So recall/ holds this one file,
the same for every principal (it names no query and no memory), which is what those commands search and
`ls recall/` shows: how to recall, and how to search the text.
"""

from __future__ import annotations

from recallfs.mount.entries import Entry, blob
from recallfs.mount.paths import Kind

NAME = "README.md"

TEXT = """# recall/: ask the memory a question

Every name under recall/ is a query. List it to run it (quote it; the trailing slash matters):

    ls "recall/how do we deploy the docs/"
    cat "recall/how do we deploy the docs/context.xml"     # every hit, for a model's context
    cat "recall/how do we deploy the docs/"01-*            # the best hit

A query directory holds the ranked hits NN-<table>-<slug>.md (00-entity-<name>.md first when the query
is an entity's name), results.json and context.xml. Options go in the name: k:20, offset:10,
kind:decision, tag:ci, since:7d, recent:, budget:800. Write / as %2F.

## Why grep -r and rg find nothing here

recall/ holds no memories of its own: it lists your recent queries as links to their results, and
`grep -r PATTERN recall/` and `rg PATTERN recall/` do not follow links below the directory they are
given (so that a search of the whole mount sees each memory once). To search memory:

    ls "recall/PATTERN/"              # ranked recall: by words and by meaning
    grep -ri PATTERN facts/ sessions/ # the text of every current memory (from the mount's root)
    rg -i PATTERN .                   # the same, from the mount's root
    grep -ri PATTERN recall/*/        # the hits of your recent queries (or: rg -L PATTERN recall/)
"""


def entry() -> Entry:
    return Entry(NAME, Kind.RECALL_README, content=blob(TEXT.encode()))
