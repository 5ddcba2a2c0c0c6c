//! The list-append checker, after Elle (Kingsbury and Alvaro, VLDB 2020), written here
//! because Elle runs on the JVM. From a history of transactions that read and append to
//! lists it infers each key's version order (the longest list read; every other read must be
//! a prefix of it), the dependencies between transactions (ww: appended the next element;
//! wr: read what the other appended last; rw: read a version the other's append followed),
//! and names what it finds as Adya does:
//!
//! - per read: `garbage-read` (an element no one appended), `duplicate-elements`, `internal`
//!   (a read that misses the transaction's own earlier appends), `G1a` (an element of a
//!   transaction that failed), `G1b` (a list ending in another transaction's intermediate
//!   append), `incompatible-order` (two reads neither of which is a prefix of the other);
//! - `lost-update`: committed transactions that read the same version of a key and both
//!   appended to it;
//! - cycles, one example for each strongly connected component: `G0` (ww only), `G1c` (ww and
//!   wr), `G-single` (exactly one rw), `G2-item` (more).
//!
//! A transaction whose outcome is unknown counts as committed when one of its appends was
//! read. The search for G-single tries at most [`MAX_SEARCHES`] rw edges per component, so
//! that a large component stays quick to check; when it found none there, the component's
//! cycle is `cycle-unclassified` (no model allows it), not G2-item.

use std::collections::{HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::client::Outcome;

/// Rw edges tried per component when looking for a cycle with only one of them.
const MAX_SEARCHES: usize = 2000;

/// A micro-operation: a read of a key's list (None until answered) or an append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mop {
    #[serde(rename = "r")]
    Read(u64, Option<Vec<u64>>),
    Append(u64, u64),
}

pub struct Txn {
    /// How reports name it ("client 2 at 1200 ms").
    pub name: String,
    pub outcome: Outcome,
    pub mops: Vec<Mop>,
}

#[derive(Debug)]
pub struct Anomaly {
    pub kind: &'static str,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Dep {
    Ww,
    Wr,
    Rw,
}

impl Dep {
    fn name(self) -> &'static str {
        match self {
            Dep::Ww => "ww",
            Dep::Wr => "wr",
            Dep::Rw => "rw",
        }
    }
}

/// A successful read: which transaction, which key, and how many elements of the list
/// were there before the transaction's own appends.
struct Observed {
    txn: usize,
    key: u64,
    seen: usize,
    list: Vec<u64>,
}

pub fn check(txns: &[Txn]) -> Vec<Anomaly> {
    let mut found = Vec::new();
    let mut anomaly = |kind, detail| found.push(Anomaly { kind, detail });
    // Who appended each element, and whether it was that transaction's last append to its key.
    let mut writer: HashMap<(u64, u64), (usize, bool)> = HashMap::new();
    for (t, txn) in txns.iter().enumerate() {
        for (i, mop) in txn.mops.iter().enumerate() {
            if let Mop::Append(k, v) = *mop {
                let last = !txn.mops[i + 1..]
                    .iter()
                    .any(|m| matches!(m, Mop::Append(k2, _) if *k2 == k));
                writer.insert((k, v), (t, last));
            }
        }
    }

    let mut observed = Vec::new();
    for (t, txn) in txns.iter().enumerate() {
        if txn.outcome != Outcome::Ok {
            continue;
        }
        for (i, mop) in txn.mops.iter().enumerate() {
            let Mop::Read(key, Some(list)) = mop else {
                continue;
            };
            let key = *key;
            let own: Vec<u64> = txn.mops[..i]
                .iter()
                .filter_map(|m| match m {
                    Mop::Append(k, v) if *k == key => Some(*v),
                    _ => None,
                })
                .collect();
            let at = || format!("{} read key {key} as {list:?}", txn.name);
            let mut distinct = HashSet::new();
            if !list.iter().all(|v| distinct.insert(*v)) {
                anomaly("duplicate-elements", at());
            }
            if !list.ends_with(&own) {
                anomaly(
                    "internal",
                    format!("{}, missing its own appends {own:?}", at()),
                );
                continue;
            }
            for v in list {
                match writer.get(&(key, *v)) {
                    None => anomaly("garbage-read", format!("{}: no one appended {v}", at())),
                    Some(&(w, _)) if txns[w].outcome == Outcome::Fail => anomaly(
                        "G1a",
                        format!(
                            "{}: {v} was appended by {}, which failed",
                            at(),
                            txns[w].name
                        ),
                    ),
                    Some(_) => {}
                }
            }
            let seen = list.len() - own.len();
            if let Some(&(w, last)) = seen
                .checked_sub(1)
                .and_then(|i| writer.get(&(key, list[i])))
                && w != t
                && !last
            {
                anomaly(
                    "G1b",
                    format!(
                        "{}: {} was not the last append of {}",
                        at(),
                        list[seen - 1],
                        txns[w].name
                    ),
                );
            }
            observed.push(Observed {
                txn: t,
                key,
                seen,
                list: list.clone(),
            });
        }
    }

    // Each key's version order: the longest list read, of which every read is a prefix.
    let mut order: HashMap<u64, Vec<u64>> = HashMap::new();
    for o in &observed {
        let longest = order.entry(o.key).or_default();
        if o.list.len() > longest.len() {
            *longest = o.list.clone();
        }
    }
    let mut incompatible = HashSet::new();
    for o in &observed {
        let longest = &order[&o.key];
        if !longest.starts_with(&o.list) && incompatible.insert(o.key) {
            anomaly(
                "incompatible-order",
                format!(
                    "{} read key {} as {:?}, but another read saw {longest:?}",
                    txns[o.txn].name, o.key, o.list
                ),
            );
        }
    }

    let mut graph = Graph::new(txns.len());
    let writer_of = |k: u64, v: u64| writer.get(&(k, v)).map(|&(w, _)| w);
    for (&key, list) in &order {
        if incompatible.contains(&key) {
            continue;
        }
        for pair in list.windows(2) {
            if let (Some(a), Some(b)) = (writer_of(key, pair[0]), writer_of(key, pair[1])) {
                graph.add(a, b, Dep::Ww);
            }
        }
    }
    for o in &observed {
        if incompatible.contains(&o.key) {
            continue;
        }
        let list = &order[&o.key];
        if let Some(w) = o
            .seen
            .checked_sub(1)
            .and_then(|i| writer_of(o.key, list[i]))
        {
            graph.add(w, o.txn, Dep::Wr);
        }
        if let Some(w) = list.get(o.seen).and_then(|v| writer_of(o.key, *v)) {
            graph.add(o.txn, w, Dep::Rw);
        }
    }

    // Lost update: committed transactions that read one version of a key and both appended.
    let mut read_then_appended: HashMap<(u64, usize), Vec<usize>> = HashMap::new();
    for o in &observed {
        let txn = &txns[o.txn];
        if o.seen == o.list.len()
            && txn
                .mops
                .iter()
                .any(|m| matches!(m, Mop::Append(k, _) if *k == o.key))
        {
            read_then_appended
                .entry((o.key, o.seen))
                .or_default()
                .push(o.txn);
        }
    }
    for ((key, seen), readers) in read_then_appended {
        if readers.len() > 1 {
            let names: Vec<&str> = readers.iter().map(|&t| txns[t].name.as_str()).collect();
            anomaly(
                "lost-update",
                format!("{names:?} all read key {key} with {seen} elements and appended to it"),
            );
        }
    }

    for (kind, cycle) in graph.cycles() {
        anomaly(kind, describe(txns, &cycle));
    }
    found
}

/// A cycle as the transactions and the edges between them, each with what it did.
fn describe(txns: &[Txn], cycle: &[(usize, Dep)]) -> String {
    let mut out = String::new();
    for (t, dep) in cycle {
        let txn = &txns[*t];
        out.push_str(&format!("{} {:?} -{}-> ", txn.name, txn.mops, dep.name()));
    }
    out.push_str(&txns[cycle[0].0].name);
    out
}

/// The dependency graph between transactions.
struct Graph {
    out: Vec<Vec<(usize, Dep)>>,
    edges: HashSet<(usize, usize, Dep)>,
}

impl Graph {
    fn new(nodes: usize) -> Graph {
        Graph {
            out: vec![Vec::new(); nodes],
            edges: HashSet::new(),
        }
    }

    fn add(&mut self, from: usize, to: usize, dep: Dep) {
        if from != to && self.edges.insert((from, to, dep)) {
            self.out[from].push((to, dep));
        }
    }

    /// One named cycle for each strongly connected component, the worst kind first.
    fn cycles(&self) -> Vec<(&'static str, Vec<(usize, Dep)>)> {
        let all = [Dep::Ww, Dep::Wr, Dep::Rw];
        let mut found = Vec::new();
        for component in self.components(&all) {
            let inside: HashSet<usize> = component.iter().copied().collect();
            let edges_of = |deps: &[Dep]| {
                component
                    .iter()
                    .flat_map(|&u| self.out[u].iter().map(move |&(v, d)| (u, v, d)))
                    .filter(|(_, v, d)| inside.contains(v) && deps.contains(d))
                    .collect::<Vec<_>>()
            };
            // G0 and G1c: a cycle within the ww (ww and wr) edges, through its first edge
            // (first wr edge).
            let mut named = None;
            for (kind, deps, through) in [
                ("G0", &[Dep::Ww][..], Dep::Ww),
                ("G1c", &[Dep::Ww, Dep::Wr][..], Dep::Wr),
            ] {
                for sub in self.components_within(&inside, deps) {
                    let sub: HashSet<usize> = sub.into_iter().collect();
                    let edge = edges_of(&[through])
                        .into_iter()
                        .find(|(u, v, _)| sub.contains(u) && sub.contains(v));
                    if let Some((u, v, d)) = edge
                        && let Some(path) = self.path(v, u, &sub, deps)
                    {
                        named = Some((kind, close(u, d, path)));
                        break;
                    }
                }
                if named.is_some() {
                    break;
                }
            }
            // G-single: an rw edge closed by ww and wr edges; else G2-item through any edge.
            if named.is_none() {
                let rw = edges_of(&[Dep::Rw]);
                named = rw
                    .iter()
                    .take(MAX_SEARCHES)
                    .find_map(|&(u, v, d)| {
                        self.path(v, u, &inside, &[Dep::Ww, Dep::Wr])
                            .map(|p| ("G-single", close(u, d, p)))
                    })
                    .or_else(|| {
                        let &(u, v, d) = rw.first()?;
                        let cycle = close(u, d, self.path(v, u, &inside, &all)?);
                        let rw_edges = cycle.iter().filter(|(_, d)| *d == Dep::Rw).count();
                        let kind = if rw_edges == 1 {
                            "G-single"
                        } else if rw.len() > MAX_SEARCHES {
                            // Not every rw edge was tried: a G-single may hide here.
                            "cycle-unclassified"
                        } else {
                            "G2-item"
                        };
                        Some((kind, cycle))
                    });
            }
            found.extend(named);
        }
        found
    }

    /// Strongly connected components of more than one node over `deps` (Tarjan, iterative).
    fn components(&self, deps: &[Dep]) -> Vec<Vec<usize>> {
        let every: HashSet<usize> = (0..self.out.len()).collect();
        self.components_within(&every, deps)
    }

    fn components_within(&self, nodes: &HashSet<usize>, deps: &[Dep]) -> Vec<Vec<usize>> {
        let n = self.out.len();
        let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
        let mut on_stack = vec![false; n];
        let (mut stack, mut next, mut found) = (Vec::new(), 0, Vec::new());
        let mut roots: Vec<usize> = nodes.iter().copied().collect();
        roots.sort_unstable();
        for root in roots {
            if index[root] != usize::MAX {
                continue;
            }
            // (node, next edge to look at)
            let mut work = vec![(root, 0)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (u, ref mut e)) = work.last_mut() {
                let edge = self.out[u][*e..]
                    .iter()
                    .position(|(v, d)| nodes.contains(v) && deps.contains(d));
                if let Some(p) = edge {
                    let v = self.out[u][*e + p].0;
                    *e += p + 1;
                    if index[v] == usize::MAX {
                        index[v] = next;
                        low[v] = next;
                        next += 1;
                        stack.push(v);
                        on_stack[v] = true;
                        work.push((v, 0));
                    } else if on_stack[v] {
                        low[u] = low[u].min(index[v]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[u]);
                }
                if low[u] == index[u] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(w);
                        if w == u {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        found.push(component);
                    }
                }
            }
        }
        found
    }

    /// The shortest path from `from` to `to` within `nodes` over `deps`: each node with the
    /// edge that leaves it.
    fn path(
        &self,
        from: usize,
        to: usize,
        nodes: &HashSet<usize>,
        deps: &[Dep],
    ) -> Option<Vec<(usize, Dep)>> {
        let mut came_from: HashMap<usize, (usize, Dep)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        let mut reached = HashSet::from([from]);
        while let Some(u) = queue.pop_front() {
            if u == to {
                let mut path = Vec::new();
                let mut at = to;
                while at != from {
                    let (prev, dep) = came_from[&at];
                    path.push((prev, dep));
                    at = prev;
                }
                path.reverse();
                return Some(path);
            }
            for &(v, d) in &self.out[u] {
                if nodes.contains(&v) && deps.contains(&d) && reached.insert(v) {
                    came_from.insert(v, (u, d));
                    queue.push_back(v);
                }
            }
        }
        None
    }
}

/// The cycle `u -d-> path... -> u`.
fn close(u: usize, d: Dep, path: Vec<(usize, Dep)>) -> Vec<(usize, Dep)> {
    let mut cycle = vec![(u, d)];
    cycle.extend(path);
    cycle
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(k: u64, list: &[u64]) -> Mop {
        Mop::Read(k, Some(list.to_vec()))
    }

    fn a(k: u64, v: u64) -> Mop {
        Mop::Append(k, v)
    }

    /// The kinds found in committed transactions, in order.
    fn kinds(txns: Vec<Vec<Mop>>) -> Vec<&'static str> {
        kinds_with(txns.into_iter().map(|m| (Outcome::Ok, m)).collect())
    }

    fn kinds_with(txns: Vec<(Outcome, Vec<Mop>)>) -> Vec<&'static str> {
        let txns: Vec<Txn> = txns
            .into_iter()
            .enumerate()
            .map(|(i, (outcome, mops))| Txn {
                name: format!("T{i}"),
                outcome,
                mops,
            })
            .collect();
        let mut kinds: Vec<_> = check(&txns).into_iter().map(|a| a.kind).collect();
        kinds.sort_unstable();
        kinds
    }

    #[test]
    fn a_serial_history_is_clean() {
        assert!(
            kinds(vec![
                vec![a(1, 1)],
                vec![r(1, &[1]), a(1, 2), r(1, &[1, 2])],
                vec![r(1, &[1, 2]), r(2, &[])],
            ])
            .is_empty()
        );
    }

    #[test]
    fn cycles_are_named_by_their_edges() {
        // T0 before T1 on key 1, T1 before T0 on key 2.
        let g0 = vec![
            vec![a(1, 1), a(2, 2)],
            vec![a(1, 3), a(2, 4)],
            vec![r(1, &[1, 3]), r(2, &[4, 2])],
        ];
        assert_eq!(kinds(g0), ["G0"]);
        // Each read what the other appended.
        let g1c = vec![vec![a(1, 1), r(2, &[5])], vec![a(2, 5), r(1, &[1])]];
        assert_eq!(kinds(g1c), ["G1c"]);
        // Read skew: T0 missed T1's append to key 1 but saw its append to key 2.
        let g_single = vec![
            vec![r(1, &[]), r(2, &[2])],
            vec![a(1, 1), a(2, 2)],
            vec![r(1, &[1])],
        ];
        assert_eq!(kinds(g_single), ["G-single"]);
        // Write skew.
        let g2 = vec![
            vec![r(1, &[]), a(2, 10)],
            vec![r(2, &[]), a(1, 20)],
            vec![r(1, &[20]), r(2, &[10])],
        ];
        assert_eq!(kinds(g2), ["G2-item"]);
    }

    #[test]
    fn two_appends_after_reading_the_same_version_are_a_lost_update() {
        let lost = vec![
            vec![r(1, &[]), a(1, 1)],
            vec![r(1, &[]), a(1, 2)],
            vec![r(1, &[1, 2])],
        ];
        assert_eq!(kinds(lost), ["G-single", "lost-update"]);
    }

    #[test]
    fn reads_of_failed_intermediate_unknown_or_foreign_elements() {
        let failed = vec![
            (Outcome::Fail, vec![a(1, 1)]),
            (Outcome::Ok, vec![r(1, &[1])]),
        ];
        assert_eq!(kinds_with(failed), ["G1a"]);
        let unknown = vec![
            (Outcome::Unknown, vec![a(1, 1)]),
            (Outcome::Ok, vec![r(1, &[1])]),
        ];
        assert!(
            kinds_with(unknown).is_empty(),
            "an unknown append may be seen"
        );
        assert_eq!(
            kinds(vec![vec![a(1, 1), a(1, 2)], vec![r(1, &[1])]]),
            ["G1b"]
        );
        assert_eq!(kinds(vec![vec![r(1, &[99])]]), ["garbage-read"]);
        assert_eq!(
            kinds(vec![vec![a(1, 1)], vec![r(1, &[1, 1])]]),
            ["duplicate-elements"]
        );
        assert_eq!(kinds(vec![vec![a(1, 5), r(1, &[])]]), ["internal"]);
        assert_eq!(
            kinds(vec![
                vec![a(1, 1)],
                vec![a(1, 2)],
                vec![r(1, &[1, 2])],
                vec![r(1, &[2, 1])]
            ]),
            ["incompatible-order"]
        );
    }

    #[test]
    fn a_cycle_names_its_transactions_and_edges() {
        let txns: Vec<Txn> = [
            vec![r(1, &[]), a(2, 10)],
            vec![r(2, &[]), a(1, 20)],
            vec![r(1, &[20]), r(2, &[10])],
        ]
        .into_iter()
        .enumerate()
        .map(|(i, mops)| Txn {
            name: format!("T{i}"),
            outcome: Outcome::Ok,
            mops,
        })
        .collect();
        let found = check(&txns);
        assert_eq!(found.len(), 1);
        let detail = &found[0].detail;
        assert!(
            detail.contains("-rw-> T1") && detail.contains("-rw-> T0"),
            "{detail}"
        );
    }
}
