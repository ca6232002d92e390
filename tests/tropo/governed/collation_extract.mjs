// Prints, as JSON, how Node's ICU orders the suite's collation domain: the characters it
// ignores, and the primary groups in order, each group's characters in full order.
// test_collation.py holds tropo/review/collation_table.py to this output.
const base = new Intl.Collator(undefined, { sensitivity: "base" });
const full = new Intl.Collator(undefined, { sensitivity: "variant" });
const domain = [];
for (const [low, high] of [[0x09, 0x0d], [0x20, 0x17f], [0x2000, 0x206f]]) {
  for (let c = low; c <= high; c++) domain.push(String.fromCharCode(c));
}
const ignored = domain.filter((ch) => full.compare(ch, "") === 0);
const kept = domain.filter((ch) => full.compare(ch, "") !== 0).sort((a, b) => base.compare(a, b) || full.compare(a, b));
const groups = [];
for (const ch of kept) {
  const last = groups[groups.length - 1];
  if (last && base.compare(last[0], ch) === 0) last.push(ch);
  else groups.push([ch]);
}
console.log(JSON.stringify({ ignored: ignored.join(""), groups: groups.map((g) => g.join("")) }));
