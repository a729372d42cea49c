/**
 * A Zipf choice among `items`: the item of rank r (1-based, in the given order) is chosen with probability
 * proportional to 1 / r^s. s = 0 is uniform; s around 1 is the usual "a few keys are hot" skew.
 */
export function zipfSampler<T>(items: readonly T[], s: number, random: () => number = Math.random): () => T {
  if (items.length === 0) throw new Error('zipfSampler needs at least one item');
  const cumulative = new Float64Array(items.length);
  let total = 0;
  for (let rank = 1; rank <= items.length; rank++) {
    total += 1 / rank ** s;
    cumulative[rank - 1] = total;
  }
  return () => {
    const target = random() * total;
    let low = 0;
    let high = items.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (cumulative[middle] < target) low = middle + 1;
      else high = middle;
    }
    return items[low];
  };
}
