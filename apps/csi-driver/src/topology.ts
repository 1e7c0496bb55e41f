import type { TopologyMsg } from './csi-types.js';

/** The topology key of a node's volumes (DESIGN.md §7). */
export const TOPOLOGY_KEY = 'topology.lvstamp.io/node';

/** This node's topology segment: `{ "topology.lvstamp.io/node": <nodeId> }`. */
export function nodeTopology(nodeId: string): TopologyMsg {
  return { segments: { [TOPOLOGY_KEY]: nodeId } };
}

/**
 * True when a topology from a request describes this node: every segment
 * it names is one this node has, with the same value (an unknown key is a
 * place lvstamp cannot promise to be).
 */
export function isThisNode(topology: TopologyMsg, nodeId: string): boolean {
  const mine = nodeTopology(nodeId).segments;
  return Object.entries(topology.segments).every(([key, value]) => mine[key] === value);
}
