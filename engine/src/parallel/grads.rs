//! Summing gradients over the devices that hold the same parameters.

use std::collections::HashMap;

use burn::{
    module::{AutodiffModule, ModuleVisitor, Param, ParamId},
    optim::GradientsParams,
    tensor::{Tensor, TensorData, backend::AutodiffBackend},
};

use crate::{
    comm::{CommError, Communicator, Rank, Tag},
    host::host_f32,
};

/// Copies the gradients of `ids` out to the host (zeros for a parameter without one), in
/// visiting order.
struct Extract<'a> {
    grads: &'a GradientsParams,
    ids: &'a [ParamId],
    values: Vec<f32>,
    order: Vec<(ParamId, Vec<usize>)>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Extract<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if !self.ids.contains(&param.id) {
            return;
        }
        let shape = param.val().dims().to_vec();
        match self.grads.get::<B::InnerBackend, D>(param.id) {
            Some(grad) => {
                self.values.extend(host_f32(grad));
            }
            None => self
                .values
                .extend(std::iter::repeat_n(0.0, shape.iter().product())),
        }
        self.order.push((param.id, shape));
    }
}

/// Puts summed host gradients back, as tensors on the parameters' devices.
struct Insert<'a> {
    grads: &'a mut GradientsParams,
    sums: HashMap<ParamId, Vec<f32>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Insert<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(values) = self.sums.remove(&param.id) {
            let dims: [usize; D] = param.val().dims();
            let device = param.val().device();
            let grad =
                Tensor::<B::InnerBackend, D>::from_data(TensorData::new(values, dims), &device);
            self.grads.register::<B::InnerBackend, D>(param.id, grad);
        }
    }
}

/// Replaces the gradients of `ids` in `grads` by their sum over `group` (every member passes
/// the same ids of the same architecture). A group of one is left as it is.
pub fn all_reduce_gradients<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &mut GradientsParams,
    ids: &[ParamId],
    comm: &dyn Communicator,
    group: &[Rank],
) -> Result<(), CommError> {
    if group.len() < 2 || ids.is_empty() {
        return Ok(());
    }
    let mut extract = Extract {
        grads,
        ids,
        values: Vec::new(),
        order: Vec::new(),
    };
    model.visit(&mut extract);
    let Extract { values, order, .. } = extract;
    let summed = comm.all_reduce_sum(group, Tag::GradReduce, values)?;
    let mut sums = HashMap::new();
    let mut start = 0;
    for (id, shape) in order {
        let len: usize = shape.iter().product();
        sums.insert(id, summed[start..start + len].to_vec());
        start += len;
    }
    model.visit(&mut Insert { grads, sums });
    Ok(())
}
