//! Every shader with every storage access bounds-checked: the launch plans the wgpu backend
//! runs, on buffers of exactly the sizes each plan claims suffice, must index nothing past
//! them.
//!
//! cubecl compiles our WGSL with naga's bounds checks off and sub-allocates tensors from large
//! pages, so an index past a tensor reads its neighbour silently. Here each shader is rewritten
//! so that every `binding[index]` goes through a check against `arrayLength(&binding)` that
//! records a violation in an extra atomic binding (and reads element 0 instead), and the plans
//! run through wgpu directly, one exactly sized buffer per binding. A positive control (a pair
//! block one word short) must be caught first, so the check cannot pass by being blind.
//! (The Vulkan validation layer's GPU-assisted checks, tried first, reported nothing on
//! lavapipe even for a gross over-read: see the note of issue 17.)

use std::collections::HashMap;

use megagraph_engine::{
    graph::{NearLimits, NearPairs, RmatParams, rmat},
    kernels::{
        CsrIndex, DropoutMask, HopsIndex, RowNumbering,
        plan::{
            AttentionShape, ColumnSumShape, DropoutShape, HopsShape, HopsTeam, LaunchPlan,
            SparseShape, Tiling,
        },
        shaders::Shader,
    },
};

use crate::common::{TestError, TestResult, have_adapter};

/// The storage bindings of `source` that are runtime-sized arrays: (binding, name).
fn array_bindings(source: &str) -> Vec<(u32, String)> {
    source
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("@group(0) @binding(")?;
            let (binding, rest) = rest.split_once(')')?;
            let (name, ty) = rest.split_once("> ")?.1.split_once(':')?;
            let binding = binding.parse().ok()?;
            ty.trim()
                .starts_with("array<")
                .then(|| (binding, name.trim().to_string()))
        })
        .collect()
}

/// Whether `c` can be part of a WGSL identifier.
fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` with every `name[index]` of the `names` replaced by `name[check_name(index)]`,
/// indices rewritten too (nested accesses).
fn wrap_indices(text: &str, names: &[String]) -> String {
    let mut out = String::new();
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for name in names {
            let open = format!("{name}[");
            let before = out.chars().last().is_none_or(|c| !ident(c));
            if before && rest.starts_with(&open) {
                let inner_start = open.len();
                let mut depth = 1;
                let close = rest[inner_start..]
                    .char_indices()
                    .find_map(|(i, c)| {
                        depth += match c {
                            '[' => 1,
                            ']' => -1,
                            _ => 0,
                        };
                        (depth == 0).then_some(inner_start + i)
                    })
                    .expect("brackets balance in the shaders");
                let inner = wrap_indices(&rest[inner_start..close], names);
                out.push_str(&format!("{name}[check_{name}({inner})]"));
                rest = &rest[close + 1..];
                continue 'scan;
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `source` with every access to a storage array checked against its length; a violation sets
/// bit `binding` of `oob[0]` and raises `oob[1]` to the index, and reads or writes element 0.
fn bounds_checked(source: &str, oob_binding: usize) -> String {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let bindings = array_bindings(&code);
    let names: Vec<String> = bindings.iter().map(|(_, n)| n.clone()).collect();
    let body_start = ["\nfn ", "\n@compute"]
        .iter()
        .filter_map(|start| code.find(start))
        .min()
        .expect("declarations come before the functions");
    let mut checked = code[..body_start].to_string();
    checked.push_str(&format!(
        "\n@group(0) @binding({oob_binding}) var<storage, read_write> oob: array<atomic<u32>>;\n"
    ));
    for (binding, name) in &bindings {
        checked.push_str(&format!(
            "fn check_{name}(i: u32) -> u32 {{\n    if (i >= arrayLength(&{name})) {{\n        atomicOr(&oob[0], 1u << {binding}u);\n        atomicMax(&oob[1], i);\n        return 0u;\n    }}\n    return i;\n}}\n"
        ));
    }
    checked.push_str(&wrap_indices(&code[body_start..], &names));
    checked
}

/// A wgpu device on the first adapter (with subgroups where it has them), and pipelines
/// compiled once per specialisation.
struct Harness {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipelines: HashMap<(Shader, Vec<(&'static str, u32)>, bool), wgpu::ComputePipeline>,
}

/// What a launch indexed past its buffers: the bitmask of bindings and the largest index.
#[derive(Debug, PartialEq, Eq)]
struct Violations {
    bindings: u32,
    index: u32,
}

impl Harness {
    fn new() -> Result<Self, TestError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("bounds-check"),
            required_features: adapter.features() & wgpu::Features::SUBGROUP,
            required_limits: adapter.limits(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&descriptor))?;
        Ok(Self {
            device,
            queue,
            pipelines: HashMap::new(),
        })
    }

    fn pipeline(&mut self, plan: &LaunchPlan) -> &wgpu::ComputePipeline {
        let device = &self.device;
        self.pipelines
            .entry((plan.shader, plan.constants.clone(), plan.subgroups))
            .or_insert_with(|| {
                let source = bounds_checked(&plan.source(), plan.shader.binding_count());
                // SAFETY: as cubecl does (no naga bounds checks): the rewrite checks every access.
                let module = unsafe {
                    device.create_shader_module_trusted(
                        wgpu::ShaderModuleDescriptor {
                            label: Some(plan.shader.file_name()),
                            source: wgpu::ShaderSource::Wgsl(source.into()),
                        },
                        wgpu::ShaderRuntimeChecks::unchecked(),
                    )
                };
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(plan.shader.file_name()),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                })
            })
    }

    fn buffer(&self, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    /// Runs `plan` on zero-filled buffers of `bytes` each (the plan's sizes, or a changed copy)
    /// and returns what it indexed past them, if anything.
    fn run(&mut self, plan: &LaunchPlan, bytes: &[u64]) -> Result<Option<Violations>, TestError> {
        self.run_with(plan, bytes, &[])
    }

    /// Like [`run`](Self::run), with the buffers of the bindings named in `data` starting
    /// with those bytes (a pattern's offsets and ids, which the shaders index by).
    fn run_with(
        &mut self,
        plan: &LaunchPlan,
        bytes: &[u64],
        data: &[(usize, Vec<u8>)],
    ) -> Result<Option<Violations>, TestError> {
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let mut buffers: Vec<wgpu::Buffer> = bytes
            .iter()
            .map(|&size| self.buffer(size, storage))
            .collect();
        for (binding, data) in data {
            let fits = data.len().min(bytes[*binding] as usize);
            self.queue
                .write_buffer(&buffers[*binding], 0, &data[..fits]);
        }
        let params = self.buffer(plan.params.len() as u64, storage);
        self.queue.write_buffer(&params, 0, &plan.params);
        buffers.push(params);
        buffers.push(self.buffer(8, storage | wgpu::BufferUsages::COPY_SRC));
        let readback = self.buffer(
            8,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let layout = self.pipeline(plan).get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(self.pipeline(plan));
            pass.set_bind_group(0, &bind_group, &[]);
            let [x, y, z] = plan.groups;
            pass.dispatch_workgroups(x, y, z);
        }
        let oob = buffers.last().expect("the violation binding");
        encoder.copy_buffer_to_buffer(oob, 0, &readback, 0, 8);
        self.queue.submit([encoder.finish()]);
        readback.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        self.device.poll(wgpu::PollType::wait_indefinitely())?;
        let words: Vec<u32> = readback
            .slice(..)
            .get_mapped_range()
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        Ok((words[0] != 0).then(|| Violations {
            bindings: words[0],
            index: words[1],
        }))
    }
}

/// Every plan of forward and backward for `shape`, with the pair buckets in blocks of
/// `block_rows` rows (as `PairBuckets` splits them).
fn attention_plans(shape: AttentionShape, block_rows: usize) -> Vec<LaunchPlan> {
    let blocks: Vec<_> = (0..shape.rows)
        .step_by(block_rows)
        .map(|start| start..(start + block_rows).min(shape.rows))
        .collect();
    // The register-blocked kernels, and the tiled ones at a tiling with one row per invocation
    // and at one with teams of eight over two rows each (their bucket tiles read past a row's
    // end, clamped to the block).
    let tilings = [
        None,
        Some(Tiling {
            team: 1,
            rows: 1,
            tile: 32,
            subgroups: false,
        }),
        Some(Tiling {
            team: 8,
            rows: 2,
            tile: 64,
            subgroups: false,
        }),
        Some(Tiling {
            team: 8,
            rows: 2,
            tile: 64,
            subgroups: true,
        }),
    ];
    let mut plans = Vec::new();
    for tiling in tilings {
        for shader in [
            Shader::AttentionForward,
            Shader::AttentionBackwardQuery,
            Shader::AttentionBackwardKey,
        ] {
            for (b, rows) in blocks.iter().enumerate() {
                let accumulate = shader == Shader::AttentionBackwardKey && b > 0;
                plans.push(match tiling {
                    None => shape.launch(shader, rows.clone(), accumulate),
                    Some(t) => shape.launch_tiled(shader, t, rows.clone(), accumulate),
                });
            }
        }
    }
    plans
}

fn attention(
    heads: usize,
    rows: usize,
    keys: usize,
    head_dim: usize,
    buckets: usize,
) -> AttentionShape {
    AttentionShape {
        heads,
        rows,
        keys,
        head_dim,
        buckets,
        max_bucket: (buckets - 1) as u8,
    }
}

#[test]
fn the_bounds_checked_rewrite_keeps_every_shader_valid() -> TestResult {
    for shader in Shader::ALL {
        let source = bounds_checked(shader.source(), shader.binding_count());
        assert!(
            source.contains("check_"),
            "{}: nothing checked",
            shader.file_name()
        );
        shader.translate(&source)?;
    }
    Ok(())
}

#[test]
fn kernels_index_only_inside_the_buffers_their_plans_name() -> TestResult {
    if !have_adapter("kernels_index_only_inside_the_buffers_their_plans_name")? {
        return Ok(());
    }
    let mut harness = Harness::new()?;

    // The control: the forward kernel's pair block one word short is caught at binding 4.
    let control = attention(1, 8, 32, 4, 7).launch(Shader::AttentionForward, 0..8, false);
    let mut short = control.binding_bytes.clone();
    short[4] -= 4;
    let caught = harness.run(&control, &short)?;
    assert_eq!(
        caught,
        Some(Violations {
            bindings: 1 << 4,
            index: 63
        }),
        "a pair block one word short"
    );

    // And through the data: a bucket one past the table of the large-table path (> 16
    // buckets) is caught at the table's binding.
    let plan = attention(1, 37, 40, 16, 20).launch(Shader::AttentionForward, 0..1, false);
    let past = vec![20u8; plan.binding_bytes[PAIRS_BINDING] as usize];
    let caught = harness.run_with(&plan, &plan.binding_bytes, &[(PAIRS_BINDING, past)])?;
    assert_eq!(
        caught.map(|v| v.bindings),
        Some(1 << 3),
        "a bucket past the table"
    );

    // Keys % 4 == 0 (a row's four buckets in one word), a single pair, blocks of one and of
    // several rows, a context-parallel shard, more rows than keys, the large-table path (> 16
    // buckets), and enough rows and keys to fold the dispatch into x and y.
    let cases = [
        (attention(1, 1, 1, 16, 7), 1),
        (attention(2, 37, 37, 16, 7), 37),
        (attention(2, 64, 64, 32, 7), 64),
        (attention(2, 64, 64, 32, 7), 5),
        (attention(2, 13, 72, 16, 7), 13),
        (attention(1, 70, 9, 16, 7), 70),
        (attention(1, 37, 40, 16, 20), 1),
        (attention(3, 600, 600, 4, 7), 600),
    ];
    // The pair blocks hold every bucket of the table, its largest included, so the kernels
    // form the table indices they form on real data.
    let mut plans: Vec<(String, LaunchPlan, Vec<(usize, Vec<u8>)>)> = cases
        .iter()
        .flat_map(|(shape, block_rows)| {
            attention_plans(*shape, *block_rows)
                .into_iter()
                .map(move |plan| {
                    let block = plan.binding_bytes[PAIRS_BINDING] as usize;
                    let buckets = (0..block).map(|i| (i % shape.buckets) as u8).collect();
                    let what = format!("{shape:?} in blocks of {block_rows} rows");
                    (what, plan, vec![(PAIRS_BINDING, buckets)])
                })
        })
        .collect();
    // A real CSR of 300 × 5 (rows without entries, every column used), both ways round.
    let rows: Vec<Vec<u32>> = (0..300u32)
        .map(|r| (0..5).filter(|c| (r + c) % 3 == 0 && r % 7 != 0).collect())
        .collect();
    let offsets: Vec<usize> = std::iter::once(0)
        .chain(rows.iter().scan(0, |n, row| {
            *n += row.len();
            Some(*n)
        }))
        .collect();
    let csr = CsrIndex::new(5, &offsets, &rows.concat());
    for transposed in [false, true] {
        let (out_rows, inner) = if transposed { (5, 300) } else { (300, 5) };
        let shape = SparseShape {
            out_rows,
            width: 3,
            nnz: csr.nnz(),
            inner,
            transposed,
        };
        let data = if transposed {
            [csr.col_offsets(), csr.col_entries(), csr.entry_rows()]
        } else {
            [csr.row_offsets(), csr.col_entries(), csr.entry_cols()]
        };
        let data: Vec<_> = data.iter().map(|v| words(v)).enumerate().collect();
        if !transposed {
            // A second control, through the data: an entry naming a column past W's rows is
            // caught at W's binding, so the sparse case reads what it is given.
            let mut bad = data.clone();
            let last = bad[2].1.len() - 4;
            bad[2].1[last..].copy_from_slice(&5u32.to_le_bytes());
            let plan = shape.launch();
            let caught = harness.run_with(&plan, &plan.binding_bytes, &bad)?;
            assert_eq!(caught.map(|v| v.bindings), Some(1 << 4), "a column past W");
        }
        plans.push((format!("{shape:?}"), shape.launch(), data));
    }
    for shape in [
        ColumnSumShape {
            batch: 3,
            rows: 1000,
            width: 9,
            chunk: 256,
        },
        ColumnSumShape {
            batch: 1,
            rows: 1,
            width: 1,
            chunk: 256,
        },
    ] {
        plans.push((format!("{shape:?}"), shape.launch(), vec![]));
    }
    for (rows, width) in [(1, 1), (300, 7)] {
        let mask = DropoutMask::new(
            3,
            0.5,
            RowNumbering {
                shift: 2,
                nodes: 200,
                first_node: 10,
                first_token: 1000,
            },
        );
        let shape = DropoutShape { rows, width, mask };
        plans.push((format!("{shape:?}"), shape.launch(), vec![]));
    }
    for (what, plan, data) in &plans {
        if let Some(violations) = harness.run_with(plan, &plan.binding_bytes, data)? {
            return Err(format!(
                "{} over {what} indexes past its buffers: {violations:?} (bit b = binding b)",
                plan.shader.file_name()
            )
            .into());
        }
    }
    Ok(())
}

/// The pair-bucket binding of the dense attention kernels.
const PAIRS_BINDING: usize = 4;

/// The bytes of `values` as a buffer holds them.
fn words(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// One-byte buckets packed four to a word.
fn packed(buckets: &[u8]) -> Vec<u8> {
    let mut bytes = buckets.to_vec();
    bytes.resize(buckets.len().div_ceil(4) * 4, 0);
    bytes
}

/// Every hops plan of `index` (forward, query and key backward) with the pattern's arrays in
/// their bindings (4, 5, 6: by row for the forward and the query kernel, by key for the key
/// kernel; the order of rows or keys in the binding before `Params`).
fn hops_plans(
    index: &HopsIndex,
    heads: usize,
    head_dim: usize,
    buckets: usize,
) -> Vec<(LaunchPlan, Vec<(usize, Vec<u8>)>)> {
    let shape = HopsShape {
        heads,
        rows: index.rows(),
        keys: index.keys(),
        head_dim,
        buckets,
        pairs: index.pairs(),
        max_bucket: index.max_bucket(),
    };
    let by_row = vec![
        (4, words(index.row_offsets())),
        (5, words(index.pair_keys())),
        (6, packed(index.pair_buckets())),
    ];
    let by_key = vec![
        (4, words(index.col_offsets())),
        (5, words(index.col_rows())),
        (6, packed(index.col_buckets())),
    ];
    let with = |pattern: &[(usize, Vec<u8>)], order: (usize, &[i32])| {
        let mut data = pattern.to_vec();
        data.push((order.0, words(order.1)));
        data
    };
    // One invocation per row, and teams of 8 through workgroup memory and by subgroups (their
    // slots past the rows read the last row's pairs).
    let teams = [
        HopsTeam::SINGLE,
        HopsTeam {
            size: 8,
            subgroups: false,
        },
        HopsTeam {
            size: 8,
            subgroups: true,
        },
    ];
    teams
        .into_iter()
        .flat_map(|team| {
            [
                (
                    shape.launch(Shader::HopsForward, team),
                    with(&by_row, (9, index.row_order())),
                ),
                (
                    shape.launch(Shader::HopsBackwardQuery, team),
                    with(&by_row, (12, index.row_order())),
                ),
                (
                    shape.launch(Shader::HopsBackwardKey, team),
                    with(&by_key, (12, index.key_order())),
                ),
            ]
        })
        .collect()
}

#[test]
fn hops_kernels_index_only_inside_the_buffers_their_plans_name() -> TestResult {
    if !have_adapter("hops_kernels_index_only_inside_the_buffers_their_plans_name")? {
        return Ok(());
    }
    let mut harness = Harness::new()?;
    // An R-MAT graph's near pairs (hubs at MAX, isolated nodes alone) with one token as the
    // last key of every row, the token's row over the nodes, and the large-table path.
    let graph = rmat(&RmatParams::new(8, 4, 5))?;
    let near = NearPairs::build(
        graph.adjacency(),
        NearLimits {
            hops: 2,
            max_pairs: 16,
            max_distance: 5,
        },
    );
    let n = near.rows();
    let rows = (0..n).map(|i| {
        let (keys, buckets) = near.row(i);
        let pairs: Vec<(u32, u8)> = keys.iter().copied().zip(buckets.iter().copied()).collect();
        pairs.into_iter().chain([(n as u32, 7)])
    });
    let nodes = HopsIndex::new(n + 1, rows);
    let tokens = HopsIndex::new(n, [(0..n as u32).map(|j| (j, 7u8))]);
    let cases = [(&nodes, 2, 16, 8), (&tokens, 2, 16, 8), (&nodes, 1, 8, 20)];
    // The control: the forward's key ids one word short are caught at binding 5.
    let (control, data) = hops_plans(&nodes, 1, 8, 8).swap_remove(0);
    let mut short = control.binding_bytes.clone();
    short[5] -= 4;
    let caught = harness.run_with(&control, &short, &data)?;
    assert!(
        caught.as_ref().is_some_and(|v| v.bindings == 1 << 5),
        "key ids one word short: {caught:?}"
    );
    for (index, heads, head_dim, buckets) in cases {
        for (plan, data) in hops_plans(index, heads, head_dim, buckets) {
            if let Some(violations) = harness.run_with(&plan, &plan.binding_bytes, &data)? {
                return Err(format!(
                    "{} over {} rows × {} keys indexes past its buffers: {violations:?}",
                    plan.shader.file_name(),
                    index.rows(),
                    index.keys()
                )
                .into());
            }
        }
    }
    Ok(())
}
