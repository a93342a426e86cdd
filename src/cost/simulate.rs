//! One training step, simulated: compute runs in graph order on one stream; each process
//! group's collectives run in issue order on their own communication stream; a collective
//! starts when it is issued and its stream is free, and compute that waits for it stalls
//! until it is done. What compute spends stalled (and the communication still running when
//! compute ends) is the exposed communication.

use crate::graph::NodeId;

/// One collective (or planned bucket) on a communication stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launch {
    /// Issued when compute reaches this graph position (after every earlier node finished).
    pub issue_at: NodeId,
    /// Its communication stream (one per process group).
    pub stream: u32,
    /// How long it runs.
    pub us: f64,
}

/// The step's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepSummary {
    /// Until compute and every collective are done.
    pub step_us: f64,
    /// Sum of compute time.
    pub compute_us: f64,
    /// Sum of communication time.
    pub comm_us: f64,
    /// `step_us - compute_us`: how long compute stalls on communication, plus the
    /// communication still running after the last node.
    pub exposed_comm_us: f64,
}

/// A stretch of time compute spent waiting for a collective: what the app marks as exposed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stall {
    /// Compute could not start this node (the node count: the step's end) ...
    pub before: NodeId,
    /// ... until this launch was done.
    pub launch: usize,
    pub from_us: f64,
    pub to_us: f64,
}

/// A simulated step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    pub summary: StepSummary,
    pub launches: Vec<Launch>,
    /// When each launch starts and ends (µs from the step's start); `NaN` for a launch issued
    /// past the end of the graph.
    pub start_us: Vec<f64>,
    pub end_us: Vec<f64>,
    /// The stall attributed to each launch: compute waited this long for it.
    pub exposed_us: Vec<f64>,
    /// When each node starts on the compute stream (after any stall before it): the time
    /// axis of a graph position.
    pub node_start_us: Vec<f64>,
    /// Every stretch compute waited, in time order.
    pub stalls: Vec<Stall>,
}

/// Simulates one step. `node_us[i]` is node `i`'s compute time; `blocks` lists
/// `(node, launch)`: node `node` cannot start before `launch` is done.
pub fn run(node_us: &[f64], launches: Vec<Launch>, mut blocks: Vec<(NodeId, usize)>) -> Step {
    let n = node_us.len();
    // Issue order: by position, then as listed (stable).
    let mut order: Vec<usize> = (0..launches.len()).collect();
    order.sort_by_key(|&l| launches[l].issue_at);
    blocks.sort_by_key(|&(node, _)| node);
    let streams = launches
        .iter()
        .map(|l| l.stream as usize + 1)
        .max()
        .unwrap_or(0);
    let mut stream_free = vec![0.0f64; streams];
    let mut start = vec![f64::NAN; launches.len()];
    let mut end = vec![f64::NAN; launches.len()];
    let mut exposed = vec![0.0f64; launches.len()];
    let mut node_start = vec![0.0f64; n];
    let mut stalls = Vec::new();
    let (mut next_issue, mut next_block) = (0, 0);
    let mut t = 0.0f64;
    for pos in 0..=n {
        while let Some(&l) = order.get(next_issue) {
            let launch = &launches[l];
            if launch.issue_at != pos {
                break;
            }
            let free = stream_free
                .get(launch.stream as usize)
                .copied()
                .unwrap_or(0.0);
            let s = f64::max(t, free);
            start[l] = s;
            end[l] = s + launch.us;
            if let Some(slot) = stream_free.get_mut(launch.stream as usize) {
                *slot = end[l];
            }
            next_issue += 1;
        }
        while let Some(&(node, l)) = blocks.get(next_block) {
            if node != pos {
                break;
            }
            // A wait on a launch not yet issued (a malformed graph) does not block.
            if let (Some(&done), Some(stalled)) = (end.get(l), exposed.get_mut(l)) {
                if done > t {
                    *stalled += done - t;
                    stalls.push(Stall {
                        before: pos,
                        launch: l,
                        from_us: t,
                        to_us: done,
                    });
                    t = done;
                }
            }
            next_block += 1;
        }
        if let (Some(&us), Some(slot)) = (node_us.get(pos), node_start.get_mut(pos)) {
            *slot = t;
            t += us;
        }
    }
    let compute_us: f64 = node_us.iter().sum();
    // Communication still running when compute ends: attributed in the order it finishes.
    let mut tail: Vec<usize> = (0..launches.len()).filter(|&l| end[l] > t).collect();
    tail.sort_by(|&a, &b| end[a].total_cmp(&end[b]));
    for l in tail {
        exposed[l] += end[l] - t;
        stalls.push(Stall {
            before: n,
            launch: l,
            from_us: t,
            to_us: end[l],
        });
        t = end[l];
    }
    let comm_us = launches.iter().map(|l| l.us).sum();
    Step {
        summary: StepSummary {
            step_us: t,
            compute_us,
            comm_us,
            exposed_comm_us: (t - compute_us).max(0.0),
        },
        launches,
        start_us: start,
        end_us: end,
        exposed_us: exposed,
        node_start_us: node_start,
        stalls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(issue_at: NodeId, stream: u32, us: f64) -> Launch {
        Launch {
            issue_at,
            stream,
            us,
        }
    }

    /// Compute of 10 per node over 5 nodes; a 25 µs collective issued at node 1 and waited
    /// at node 3: it ends at 10 + 25 = 35, node 3 would start at 30, so 5 µs are exposed.
    #[test]
    fn a_wait_stalls_compute_until_the_collective_is_done() {
        let step = run(&[10.0; 5], vec![launch(1, 0, 25.0)], vec![(3, 0)]);
        assert_eq!(step.start_us, vec![10.0]);
        assert_eq!(step.end_us, vec![35.0]);
        assert_eq!(step.exposed_us, vec![5.0]);
        assert_eq!(step.node_start_us, vec![0.0, 10.0, 20.0, 35.0, 45.0]);
        assert_eq!(
            step.stalls,
            vec![Stall {
                before: 3,
                launch: 0,
                from_us: 30.0,
                to_us: 35.0
            }]
        );
        assert_eq!(
            step.summary,
            StepSummary {
                step_us: 55.0,
                compute_us: 50.0,
                comm_us: 25.0,
                exposed_comm_us: 5.0
            }
        );
    }

    /// Hidden entirely: the collective ends before its wait.
    #[test]
    fn hidden_communication_is_not_exposed() {
        let step = run(&[10.0; 5], vec![launch(0, 0, 15.0)], vec![(4, 0)]);
        assert_eq!(step.summary.exposed_comm_us, 0.0);
        assert_eq!(step.summary.step_us, 50.0);
    }

    /// One stream runs its collectives one after another: the second starts when the first
    /// ends, not when it is issued. On two streams they overlap.
    #[test]
    fn a_stream_serialises_its_collectives() {
        let node_us = [1.0, 1.0, 1.0];
        let same = run(
            &node_us,
            vec![launch(0, 0, 10.0), launch(1, 0, 10.0)],
            vec![(2, 0), (2, 1)],
        );
        assert_eq!(same.start_us, vec![0.0, 10.0]);
        assert_eq!(same.end_us, vec![10.0, 20.0]);
        // Node 2 starts at 20 instead of 2: 8 µs for the first, 10 for the second.
        assert_eq!(same.exposed_us, vec![8.0, 10.0]);
        assert_eq!(same.summary.step_us, 21.0);
        assert_eq!(same.summary.exposed_comm_us, 18.0);

        let two = run(
            &node_us,
            vec![launch(0, 0, 10.0), launch(1, 1, 10.0)],
            vec![(2, 0), (2, 1)],
        );
        assert_eq!(two.start_us, vec![0.0, 1.0]);
        assert_eq!(two.end_us, vec![10.0, 11.0]);
        assert_eq!(two.exposed_us, vec![8.0, 1.0]);
        assert_eq!(two.summary.step_us, 12.0);
    }

    /// A collective nobody waits for still has to finish: the step ends when it does, and
    /// the part after the last node is exposed.
    #[test]
    fn unwaited_communication_extends_the_step() {
        let step = run(&[5.0, 5.0], vec![launch(1, 0, 20.0)], vec![]);
        assert_eq!(step.end_us, vec![25.0]);
        assert_eq!(step.summary.step_us, 25.0);
        assert_eq!(step.summary.exposed_comm_us, 15.0);
        assert_eq!(step.exposed_us, vec![15.0]);
        assert_eq!(
            step.stalls,
            vec![Stall {
                before: 2,
                launch: 0,
                from_us: 10.0,
                to_us: 25.0
            }]
        );
    }

    /// A launch issued at the end of the graph (after its last node).
    #[test]
    fn issue_after_the_last_node() {
        let step = run(&[5.0, 5.0], vec![launch(2, 0, 3.0)], vec![]);
        assert_eq!(step.start_us, vec![10.0]);
        assert_eq!(step.summary.step_us, 13.0);
    }

    /// Waits on the same launch: only the first stalls. A block naming no launch is ignored.
    #[test]
    fn repeated_waits_and_bad_indices() {
        let step = run(
            &[1.0; 4],
            vec![launch(0, 0, 5.0)],
            vec![(2, 0), (3, 0), (1, 7)],
        );
        assert_eq!(step.exposed_us, vec![3.0]);
        assert_eq!(step.summary.step_us, 7.0);
        let empty = run(&[], vec![], vec![]);
        assert_eq!(empty.summary, StepSummary::default());
    }

    /// Launches issued at the same node go in the order listed.
    #[test]
    fn ties_keep_their_order() {
        let step = run(
            &[1.0, 1.0],
            vec![launch(1, 0, 2.0), launch(1, 0, 3.0), launch(0, 0, 1.0)],
            vec![],
        );
        assert_eq!(step.start_us, vec![1.0, 3.0, 0.0]);
        assert_eq!(step.summary.step_us, 6.0);
    }
}
