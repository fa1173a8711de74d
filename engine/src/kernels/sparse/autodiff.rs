//! Sparse × dense products under `Autodiff<B>`: the gradient of `x · w` with respect to `w` is
//! `xᵀ · dY`, and that of `xᵀ · g` with respect to `g` is `x · dY`; the sparse matrix is data.

use burn::{
    backend::{
        Autodiff,
        autodiff::{
            checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
            grads::Gradients,
            ops::{Backward, Ops, OpsKind},
        },
    },
    tensor::{Tensor, TensorPrimitive},
};

use super::{SparseMatmulBackend, SparseMatrix};

/// The backward step of one sparse product, registered on the autodiff graph.
#[derive(Debug)]
struct SparseProductBackward {
    /// Whether the forward was the transposed product.
    transposed: bool,
}

/// The product (`transposed` or not) of `x` and `dense` on the inner backend.
fn product<B: SparseMatmulBackend>(
    transposed: bool,
    x: SparseMatrix<B>,
    dense: Tensor<B, 2>,
) -> Tensor<B, 2> {
    if transposed {
        B::sparse_matmul_transposed(x, dense)
    } else {
        B::sparse_matmul(x, dense)
    }
}

impl<B: SparseMatmulBackend> Backward<B, 1> for SparseProductBackward {
    type State = SparseMatrix<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let [node_dense] = ops.parents;
        let grad: Tensor<B, 2> =
            Tensor::from_primitive(TensorPrimitive::Float(grads.consume::<B>(&ops.node)));
        if let Some(node) = node_dense {
            let d_dense = product(!self.transposed, ops.state, grad);
            grads.register::<B>(node.id, d_dense.into_primitive().tensor());
        }
    }
}

/// `x` on the inner backend. Panics if its values are tracked: no gradient flows into them.
fn inner<B: SparseMatmulBackend, C: CheckpointStrategy>(
    x: SparseMatrix<Autodiff<B, C>>,
) -> SparseMatrix<B> {
    let values = x.values.into_primitive().tensor();
    assert!(
        values.node.requirement.is_none(),
        "the values of a sparse matrix are data: the sparse kernels compute no gradient for them"
    );
    SparseMatrix {
        rows: x.rows,
        cols: x.cols,
        row_offsets: x.row_offsets.inner(),
        entry_rows: x.entry_rows.inner(),
        entry_cols: x.entry_cols.inner(),
        col_offsets: x.col_offsets.inner(),
        col_entries: x.col_entries.inner(),
        values: Tensor::from_primitive(TensorPrimitive::Float(values.primitive)),
    }
}

/// The tracked product of `x` and `dense` on `Autodiff<B, C>`.
fn tracked<B: SparseMatmulBackend, C: CheckpointStrategy>(
    transposed: bool,
    x: SparseMatrix<Autodiff<B, C>>,
    dense: Tensor<Autodiff<B, C>, 2>,
) -> Tensor<Autodiff<B, C>, 2> {
    let x = inner(x);
    let dense = dense.into_primitive().tensor();
    let prepared = SparseProductBackward { transposed }
        .prepare::<C>([dense.node.clone()])
        .compute_bound()
        .stateful();
    let dense_inner = Tensor::from_primitive(TensorPrimitive::Float(dense.primitive));
    let output = match prepared {
        OpsKind::Tracked(prep) => {
            let out = product(transposed, x.clone(), dense_inner);
            prep.finish(x, out.into_primitive().tensor())
        }
        OpsKind::UnTracked(prep) => prep.finish(
            product(transposed, x, dense_inner)
                .into_primitive()
                .tensor(),
        ),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

impl<B: SparseMatmulBackend, C: CheckpointStrategy> SparseMatmulBackend for Autodiff<B, C> {
    fn sparse_matmul(x: SparseMatrix<Self>, w: Tensor<Self, 2>) -> Tensor<Self, 2> {
        tracked(false, x, w)
    }

    fn sparse_matmul_transposed(x: SparseMatrix<Self>, g: Tensor<Self, 2>) -> Tensor<Self, 2> {
        tracked(true, x, g)
    }
}
