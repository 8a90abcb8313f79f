const words = ['café', 'naïve', '日本語', '🙂 smile'];
for (const w of words) {
  console.log(w, [...w].length, w.length, w.normalize('NFD').length);
}
