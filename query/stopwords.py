"""The stop-word list for the FTS index.

DuckDB's default english list drops words people do search for ("hello", "first", "new", ...).
This one keeps only function words that carry no topic: articles, pronouns, auxiliaries,
prepositions and conjunctions.
"""

STOPWORDS = frozenset(
    """
    a an the and or but nor if then else so than that this these those there here
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    is am are was were be been being do does did doing have has had having
    will would shall should can could may might must
    of at by for with about against between into through during before after above below
    to from up down in out on off over under again further once
    what which who whom whose when where why how
    all any both each few more most other some such no not only own same too very
    s t just don now also as
    """.split()
)
