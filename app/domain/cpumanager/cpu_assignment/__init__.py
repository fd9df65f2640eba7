"""CPU assignment: which logical CPUs an exclusive allocation gets (follows
pkg/kubelet/cm/cpumanager/cpu_assignment.go, v1.37 and master as 1.38).

The static policy knows *how many* CPUs a container or pod needs and from which pool; this
package decides *which* ones. One module per concern:

* ``common`` - the sorting strategy, the errors and the argument checks every take shares;
* ``gomath`` - Go-exact arithmetic (``math.Round``, integer division, the rounded standard
  deviation the distributed take scores by);
* ``go_slices`` - ``iterateCombinations`` with Go's slice sharing (upstream
  kubernetes/kubernetes#141237);
* ``topology_index`` - per-topology bitmasks and parent/child relations, computed once;
* ``accumulator`` - upstream's ``cpuAccumulator`` and its orderings and taking steps;
* ``packed`` - ``takeByTopologyNUMAPacked``;
* ``distributed`` - ``takeByTopologyNUMADistributed`` (``distribute-cpus-across-numa``), with
  the per-release differences (kubernetes#140730).

Importers use the module that owns a name; this package re-exports nothing. Standard library only.
"""
