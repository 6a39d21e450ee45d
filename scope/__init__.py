"""Who may read what: principals, partitions and the authorization predicate. Pure: no I/O."""

from recallfs.scope.partition import partition_schema
from recallfs.scope.predicate import partition_predicate
from recallfs.scope.principal import Principal, parse_workspace

__all__ = ["Principal", "parse_workspace", "partition_predicate", "partition_schema"]
