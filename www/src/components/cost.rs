//! Time estimates: a hardware picker (a GPU generation's preset, GPUs per node, NVLink, the
//! bandwidth overrides: `commlens cost`'s options, kept in the link) and the simulated step of
//! the graph as it is and as planned (step, compute, communication, exposed communication),
//! updated on every re-plan. The numbers are the core's (`commlens::cost`): torch's own
//! estimators, which the page names.

use crate::model::{parse_bandwidth, CostView, Shared};
use commlens::cost::report::us;
use commlens::cost::{GpuGeneration, Hardware, Network, StepSummary};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct CostProps {
    pub hardware: Option<Network>,
    /// The chart's x axis is the estimated time.
    pub time_axis: bool,
    pub on_time_axis: Callback<bool>,
    pub cost: Option<Shared<CostView>>,
    pub on_hardware: Callback<Option<Network>>,
}

type Field = fn(&StepSummary) -> f64;

const ROWS: [(&str, &str, Field); 4] = [
    ("step", "step", |s| s.step_us),
    ("compute", "compute", |s| s.compute_us),
    ("comm", "communication", |s| s.comm_us),
    ("exposed", "exposed communication", |s| s.exposed_comm_us),
];

fn summary(cost: &CostView) -> Html {
    html! {
        <table class="cost-summary" id="cost-summary">
            <thead><tr><th></th><th scope="col">{"as it is"}</th><th scope="col">{"planned"}</th></tr></thead>
            <tbody>{ for ROWS.iter().map(|(key, label, field)| html! {
                <tr data-row={*key}>
                    <th scope="row">{ *label }</th>
                    <td data-us={field(&cost.unbucketed).to_string()}>{ us(field(&cost.unbucketed)) }</td>
                    <td data-us={field(&cost.planned).to_string()}>{ us(field(&cost.planned)) }</td>
                </tr>
            }) }</tbody>
        </table>
    }
}

#[function_component(Cost)]
pub fn cost(props: &CostProps) -> Html {
    let bw_error = use_state(|| None::<String>);
    let Some(hw) = props.hardware.clone() else {
        let on = props.on_hardware.clone();
        let onclick = Callback::from(move |_: MouseEvent| on.emit(Some(Network::default())));
        return html! {
            <section class="cost" id="cost" aria-label="Time estimates">
                <h2>{"Time estimates"}</h2>
                <p class="muted">{"Estimate the step's compute, communication and exposed communication on a GPU generation, the graph as it is and as planned."}</p>
                <button id="cost-on" {onclick}>{"Estimate time"}</button>
            </section>
        };
    };
    let emit = {
        let cb = props.on_hardware.clone();
        move |hw: Network| cb.emit(Some(hw))
    };
    let on_gpu = {
        let (hw, emit) = (hw.clone(), emit.clone());
        Callback::from(move |e: Event| {
            let v = e.target_unchecked_into::<HtmlSelectElement>().value();
            if let Some(gpu) = GpuGeneration::parse(&v) {
                emit(Network { gpu, ..hw.clone() });
            }
        })
    };
    let on_gpn = {
        let (hw, emit) = (hw.clone(), emit.clone());
        Callback::from(move |e: Event| {
            let v = e.target_unchecked_into::<HtmlInputElement>().value();
            if let Ok(n) = v.trim().parse::<u64>() {
                if n >= 1 {
                    emit(Network {
                        gpus_per_node: n,
                        ..hw.clone()
                    });
                }
            }
        })
    };
    let on_nvlink = {
        let (hw, emit) = (hw.clone(), emit.clone());
        Callback::from(move |e: Event| {
            let checked = e.target_unchecked_into::<HtmlInputElement>().checked();
            emit(Network {
                nvlink: checked,
                ..hw.clone()
            });
        })
    };
    let on_bw = |intra: bool| {
        let (hw, emit, bw_error) = (hw.clone(), emit.clone(), bw_error.clone());
        Callback::from(move |e: Event| {
            let v = e.target_unchecked_into::<HtmlInputElement>().value();
            match parse_bandwidth(&v) {
                Ok(bw) => {
                    bw_error.set(None);
                    let mut next = hw.clone();
                    if intra {
                        next.intra_node_bw = bw;
                    } else {
                        next.inter_node_bw = bw;
                    }
                    emit(next);
                }
                Err(e) => bw_error.set(Some(e)),
            }
        })
    };
    let off = {
        let cb = props.on_hardware.clone();
        Callback::from(move |_: MouseEvent| cb.emit(None))
    };
    // What the estimates use where a bandwidth is left empty: the preset's.
    let network = Hardware::with_network(hw.clone()).network;
    let on_axis = {
        let cb = props.on_time_axis.clone();
        Callback::from(move |e: Event| {
            cb.emit(e.target_unchecked_into::<HtmlInputElement>().checked())
        })
    };
    let bw_field = |id: &'static str,
                    label: &'static str,
                    value: Option<f64>,
                    preset: f64,
                    intra: bool| {
        html! {
            <>
                <label for={id}>{ label }</label>
                <input id={id} type="text" inputmode="decimal" value={value.map(|v| v.to_string()).unwrap_or_default()}
                    placeholder={format!("preset: {preset} GB/s")} onchange={on_bw(intra)} />
            </>
        }
    };
    html! {
        <section class="cost" id="cost" aria-label="Time estimates">
            <h2>{"Time estimates"}</h2>
            <label for="gpu">{"GPU generation"}</label>
            <select id="gpu" onchange={on_gpu}>
                { for GpuGeneration::ALL.iter().map(|g| html! {
                    <option value={g.as_str()} selected={*g == hw.gpu}>{ g.as_str() }</option>
                }) }
            </select>
            <label for="gpn">{"GPUs per node"}</label>
            <input id="gpn" type="number" min="1" value={hw.gpus_per_node.to_string()} onchange={on_gpn} />
            <label class="check"><input id="nvlink" type="checkbox" checked={hw.nvlink} onchange={on_nvlink} />{" NVLink"}</label>
            { bw_field("intra-bw", "intra-node bandwidth (GB/s)", hw.intra_node_bw, network.intra_bw(), true) }
            { bw_field("inter-bw", "inter-node bandwidth (GB/s)", hw.inter_node_bw, network.inter_bw(), false) }
            if let Some(e) = &*bw_error { <p class="field-error" role="alert">{ e.clone() }</p> }
            <label class="check"><input id="time-axis" type="checkbox" checked={props.time_axis} onchange={on_axis} />
                {" x axis: estimated time (else graph position)"}</label>
            if let Some(cost) = &props.cost {
                { summary(cost) }
            } else {
                <p class="muted">{"No plan to estimate (the planner could not run)."}</p>
            }
            <p class="model-note" id="cost-note">
                {"Model estimates, not measurements: collectives by torch 2.15's analytical NCCL model (torch/_inductor/comm_analysis.py), compute by torch.utils.flop_counter's FLOP formulas and a roofline; one compute stream, one communication stream per process group. c10d collectives are listed without a time. The same numbers: "}
                <code>{ format!("commlens cost DUMP {}", cli_options(&hw)) }</code>
            </p>
            <button id="cost-off" onclick={off}>{"Hide estimates"}</button>
        </section>
    }
}

/// The `commlens cost` options that give the same numbers as `hw`.
fn cli_options(hw: &Network) -> String {
    let mut out = format!("--gpu {}", hw.gpu.as_str());
    if hw.gpus_per_node != Network::default().gpus_per_node {
        out.push_str(&format!(" --gpus-per-node {}", hw.gpus_per_node));
    }
    if !hw.nvlink {
        out.push_str(" --no-nvlink");
    }
    if let Some(bw) = hw.intra_node_bw {
        out.push_str(&format!(" --intra-bw {bw}"));
    }
    if let Some(bw) = hw.inter_node_bw {
        out.push_str(&format!(" --inter-bw {bw}"));
    }
    out
}
