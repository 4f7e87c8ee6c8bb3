/* stages/sampling-rules.js: the sampling rules of agentloop/model_backends/sampling.py
   (candidates(), which sample() draws from), in JavaScript, on the tokens an /api/next-token answer
   lists. Pure functions: the sampling stage draws what they return, and the tests call them.

   Why a copy, not the server: the sampling stage must also work where there is no server (the
   published book replays a recorded distribution), and its sliders move continuously, so no set
   of recorded answers could stand in for every setting. Live, the server gives the distribution
   (POST next_token) and the stage's check button asks it, under the sliders' settings, how many
   tokens the Python rules keep, beside this copy's count. tests/test_sampling_rules.py holds the copy
   equal to Python's candidates() under the pinned Node, over many distributions and settings
   (temperature, top-k, top-p, ties, greedy, a listing shorter than the vocabulary); the draw is
   the one part left random (drawIndex takes the uniform number as an argument, so it is tested too).
   Leaves out: drawing (sampling.js), and the MTP drafter's part of sample(). */

// The listed tokens, most likely first; equally likely ones lower id first, as sample() orders
// them. Their logprobs stand in for the logits: logprob = logit - log Σ exp(logits), the same shift
// for every token, which the softmaxes below take out again.
export function candidates(top) {
  return (top || [])
    .map((c) => ({
      id: c.id,
      piece: c.piece,
      text: c.text,
      p: c.p,
      logit: typeof c.logprob === "number" ? c.logprob : -Infinity,
    }))
    .sort((a, b) => b.logit - a.logit || a.id - b.id);
}

function softmax(xs) {
  const m = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

// sample()'s rules, in its order. Returns, for every listed token (in order), the probability after
// T and top-k (`scaled`; 0 when top-k cut it), whether it is kept, and its probability among the
// kept (`pKept`).
export function applySampling(cands, temperature, topK, topP) {
  const n = cands.length;
  if (!n) return { greedy: temperature <= 0, k: 0, kept: 0, scaled: [], cum: [], pKept: [] };
  if (temperature <= 0) {
    // T <= 0 is greedy: the most likely token, the lower id on a tie.
    const pKept = cands.map((_, i) => (i === 0 ? 1 : 0));
    return { greedy: true, k: n, kept: 1, scaled: pKept.slice(), cum: pKept.slice(), pKept };
  }
  // logits / T, then the top k (0: no limit), then softmax over those.
  const k = topK > 0 ? Math.min(topK, n) : n;
  const probs = softmax(cands.slice(0, k).map((c) => c.logit / temperature));
  // Nucleus: count the tokens whose probability before them, (cumsum - p), is below top_p; at least
  // one.
  const cum = [];
  let sum = 0;
  let kept = 0;
  for (const p of probs) {
    sum += p;
    cum.push(sum);
    if (sum - p < topP) kept++;
  }
  kept = Math.max(1, kept);
  // Renormalize over the kept tokens.
  const z = probs.slice(0, kept).reduce((a, b) => a + b, 0);
  const scaled = cands.map((_, i) => (i < k ? probs[i] : 0));
  const pKept = cands.map((_, i) => (i < kept ? probs[i] / z : 0));
  return {
    greedy: false,
    k,
    kept,
    scaled,
    cum: cands.map((_, i) => (i < k ? cum[i] : null)),
    pKept,
  };
}

// One draw from the kept tokens with their probabilities, as sampling.py's draw() makes it: the
// first whose running total passes u, in [0, 1).
export function drawIndex(pKept, u) {
  let r = u;
  let last = 0;
  for (let i = 0; i < pKept.length; i++) {
    if (pKept[i] <= 0) continue;
    last = i;
    r -= pKept[i];
    if (r < 0) return i;
  }
  return last;
}

// Whether the panel's kept set is exactly what sample() keeps over the whole vocabulary: when T <=
// 0, or when top-k keeps no more tokens than are listed. Otherwise the unlisted tokens would have
// been candidates too.
export function exactOverVocabulary(listed, vocabulary, temperature, topK) {
  if (temperature <= 0) return true;
  if (topK > 0 && topK <= listed) return true;
  return typeof vocabulary === "number" && listed >= vocabulary;
}
