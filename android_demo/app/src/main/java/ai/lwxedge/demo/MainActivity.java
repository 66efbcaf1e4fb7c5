package ai.lwxedge.demo;

import ai.lwxedge.core.VectorIndex;
import android.app.Activity;
import android.os.Bundle;
import android.view.View;
import android.widget.Button;
import android.widget.EditText;
import android.widget.TextView;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * One screen: a text field, an "Embed" button, the head's label (with its probability), the nearest
 * sentences of assets/sentences.txt (with cosine scores), the top hits of the bundled index
 * (assets/index/notes.lwxindex, if any), and the latency of each step. All model work runs on one
 * background thread.
 */
public class MainActivity extends Activity {
    private final ExecutorService worker = Executors.newSingleThreadExecutor();
    private DemoModel model;
    private EditText input;
    private Button run;
    private TextView label, neighbours, indexHits, timings, status;

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        setContentView(R.layout.activity_main);
        input = findViewById(R.id.input);
        run = findViewById(R.id.run);
        label = findViewById(R.id.label);
        neighbours = findViewById(R.id.neighbours);
        indexHits = findViewById(R.id.index_hits);
        timings = findViewById(R.id.timings);
        status = findViewById(R.id.status);
        run.setOnClickListener(this::onRun);

        worker.execute(() -> {
            try {
                DemoModel m = DemoModel.load(getApplicationContext());
                runOnUiThread(() -> {
                    model = m;
                    run.setEnabled(true);
                    status.setText(String.format(Locale.ROOT,
                            "vocabulary %d pieces, max_len %d, %d sentences, head: %s, index: %s%n%n"
                                    + "start-up:%n%s",
                            m.tokenizer.vocabSize(), m.maxLen, m.sentences.size(),
                            m.head != null ? m.head.kind() + " " + m.head.classes() : m.headWarning,
                            m.index != null ? m.index.size() + " items" : m.indexWarning,
                            DemoModel.describe(m.loadMillis)));
                });
            } catch (Throwable e) {
                runOnUiThread(() -> status.setText("Could not load the model: " + e));
            }
        });
    }

    private void onRun(View v) {
        final String text = input.getText().toString();
        final DemoModel m = model;
        if (m == null) {
            return;
        }
        run.setEnabled(false);
        worker.execute(() -> {
            try {
                DemoModel.Result r = m.query(text);
                runOnUiThread(() -> show(r));
            } catch (IllegalArgumentException e) {   // empty after normalisation
                runOnUiThread(() -> {
                    label.setText(e.getMessage());
                    neighbours.setText("");
                    indexHits.setText("");
                    timings.setText("");
                });
            } catch (Throwable e) {
                runOnUiThread(() -> label.setText("Error: " + e));
            } finally {
                runOnUiThread(() -> run.setEnabled(true));
            }
        });
    }

    private void show(DemoModel.Result r) {
        label.setText(r.label != null
                ? String.format(Locale.ROOT, "%s  (p = %.2f)", r.label, r.labelProbability)
                : "(no head)");
        StringBuilder b = new StringBuilder("Nearest sentences:\n");
        for (int k = 0; k < r.neighbours.size(); k++) {
            b.append(String.format(Locale.ROOT, "%.3f  %s%n", r.neighbourScores.get(k), r.neighbours.get(k)));
        }
        neighbours.setText(b.toString());
        if (model.index != null) {
            StringBuilder h = new StringBuilder("Your notes (bundled index):\n");
            for (VectorIndex.Hit hit : r.indexHits) {
                String shown = hit.text != null ? hit.text : "[" + hit.id + "]";   // stored without text
                h.append(String.format(Locale.ROOT, "%.3f  %s%n", hit.score, shown));
            }
            indexHits.setText(h.toString());
        }
        timings.setText(String.format(Locale.ROOT, "%d tokens%s%n%s", r.tokens,
                r.truncated ? " (truncated at max_len)" : "", DemoModel.describe(r.millis)));
    }

    @Override
    protected void onDestroy() {
        worker.execute(() -> {
            if (model != null) {
                model.close();
            }
        });
        worker.shutdown();
        super.onDestroy();
    }
}
