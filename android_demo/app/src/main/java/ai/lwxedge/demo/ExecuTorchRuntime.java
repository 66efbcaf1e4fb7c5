package ai.lwxedge.demo;

import ai.lwxedge.core.TextEmbedder;
import org.pytorch.executorch.EValue;
import org.pytorch.executorch.Module;
import org.pytorch.executorch.Tensor;

/**
 * Runs the bundle's {@code model.int8.pte} with ExecuTorch's public Android API (org.pytorch.executorch:
 * {@link Module#load(String, int, int)}, {@link Module#loadMethod}, {@link Module#forward}, {@link Module#execute},
 * {@link Tensor#fromBlob(long[], long[])}, {@link EValue#from(Tensor)}, {@link EValue#toTensor()},
 * {@link EValue#toInt()}, {@code Tensor.getDataAsFloatArray()}, {@link Tensor#shape()}).
 *
 * <p>The program (tools: lwx-edge export --int8) has one method {@code forward(input_ids int64 [B, T],
 * attention_mask int64 [B, T]) -> float32 [B, d]} with 1 &lt;= B &lt;= max_batch, 1 &lt;= T &lt;= max_len, and constant
 * methods {@code get_max_batch}, {@code get_max_seq_len}, {@code get_embedding_dim}. The int8 program needs
 * the quantized kernels (embedding_byte), which the ExecuTorch AAR links in. A Module is not used from two
 * threads at once here (the app runs everything on one background executor).
 */
final class ExecuTorchRuntime implements TextEmbedder.Runtime, AutoCloseable {
    private final Module module;

    ExecuTorchRuntime(String ptePath, int threads) {
        module = Module.load(ptePath, Module.LOAD_MODE_MMAP, threads);
        module.loadMethod("forward");
    }

    /** Value of a constant method of the program (e.g. "get_max_seq_len"), or -1 if it has none. */
    long constant(String method) {
        try {
            EValue[] out = module.execute(method);
            return out.length > 0 ? out[0].toInt() : -1;
        } catch (RuntimeException e) {
            return -1;
        }
    }

    @Override
    public float[][] run(long[] ids, long[] mask, int batch, int len) {
        long[] shape = {batch, len};
        EValue[] out = module.forward(EValue.from(Tensor.fromBlob(ids, shape)), EValue.from(Tensor.fromBlob(mask, shape)));
        Tensor t = out[0].toTensor();
        long[] s = t.shape();
        float[] data = t.getDataAsFloatArray();   // a copy: the runtime reuses its output buffer
        if (s.length != 2 || s[0] != batch) {
            throw new IllegalStateException("model.int8.pte returned shape " + java.util.Arrays.toString(s)
                    + " for a batch of " + batch);
        }
        int dim = (int) s[1];
        float[][] rows = new float[batch][dim];
        for (int r = 0; r < batch; r++) {
            System.arraycopy(data, r * dim, rows[r], 0, dim);
        }
        return rows;
    }

    @Override
    public void close() {
        module.close();
    }
}
