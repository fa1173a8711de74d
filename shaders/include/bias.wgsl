// The per-head spatial bias of the attention shaders, put before each of them by the host
// (`Shader::source`): a shader declares BUCKETS (the table's columns) and the storage binding
// `table` (f32 [heads, buckets]). With at most SMALL_TABLE buckets the head's row of the table
// sits in registers and a bucket's bias is a chain of selects; a larger table is read from
// `table`.

const SMALL_TABLE: u32 = 16u;

var<private> bias_row: array<f32, BUCKETS>;

// Loads the head's row of the table (from `table_base`) when it is small.
fn load_bias_row(table_base: u32) {
    if (BUCKETS <= SMALL_TABLE) {
        for (var b = 0u; b < BUCKETS; b++) {
            bias_row[b] = table[table_base + b];
        }
    }
}

fn bias(table_base: u32, bucket: u32) -> f32 {
    if (BUCKETS <= SMALL_TABLE) {
        var value = bias_row[0];
        for (var b = 1u; b < BUCKETS; b++) {
            value = select(value, bias_row[b], bucket == b);
        }
        return value;
    }
    return table[table_base + bucket];
}

