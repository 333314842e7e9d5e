// einsum: NumPy's equation rules (explicit "->" or implicit output, "..." broadcasting from the
// right), lowered to sums, transposes, reshapes and batched matmuls (oneDNN for float32); no
// op of its own, so gradients, tracing, saving and ONNX export come from those ops.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"

namespace ef {
namespace {

using Labels = std::vector<int>;  // letters by char code; "..." dims as 1000 + position

struct Term {
  Tensor t;
  Labels labels;
};

[[noreturn]] void bad(const std::string& eq, const std::string& why) { fail("einsum", "\"" + eq + "\": " + why); }

// Letters of one term, with "..." expanded to `ell` labels aligned from the right among
// `max_ell` (NumPy's broadcasting).
Labels parse_term(const std::string& eq, const std::string& term, int rank, int& ell_count, bool output, int max_ell) {
  Labels out;
  int letters = 0;
  bool ellipsis = false;
  for (std::size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (ellipsis || term.compare(i, 3, "...") != 0) bad(eq, "'.' only as one \"...\" per term");
      ellipsis = true;
      out.push_back(-1);  // placeholder
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<unsigned char>(c));
      ++letters;
    } else {
      bad(eq, std::string("unexpected character '") + c + "'");
    }
  }
  int ell = output ? max_ell : rank - letters;
  if (!output) {
    if (!ellipsis && letters != rank)
      bad(eq, "term \"" + term + "\" has " + std::to_string(letters) + " labels for an operand of rank " + std::to_string(rank));
    if (ellipsis && ell < 0)
      bad(eq, "term \"" + term + "\" has more labels than the operand's rank " + std::to_string(rank));
    if (!ellipsis) ell = 0;
  }
  ell_count = ellipsis ? ell : 0;
  Labels expanded;
  for (int l : out) {
    if (l != -1) {
      expanded.push_back(l);
      continue;
    }
    for (int k = 0; k < ell; ++k) expanded.push_back(1000 + (max_ell - ell) + k);
  }
  return expanded;
}

std::int64_t dim_of(const Term& t, int label) {
  auto it = std::find(t.labels.begin(), t.labels.end(), label);
  return t.t.shape()[static_cast<int>(it - t.labels.begin())];
}

bool has(const Labels& l, int x) { return std::find(l.begin(), l.end(), x) != l.end(); }

// Sums out the labels of `t` that are not in `keep`.
Term sum_out(Term t, const std::set<int>& keep) {
  std::vector<int> axes;
  Labels rest;
  for (std::size_t i = 0; i < t.labels.size(); ++i) {
    if (keep.count(t.labels[i])) rest.push_back(t.labels[i]);
    else axes.push_back(static_cast<int>(i));
  }
  if (axes.empty()) return t;
  return {sum(t.t, axes), rest};
}

Term transposed(Term t, const Labels& order) {
  std::vector<int> perm;
  for (int l : order) perm.push_back(static_cast<int>(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin()));
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int>(i);
  if (identity) return {t.t, order};
  return {transpose(t.t, perm), order};
}

std::int64_t group_size(const Term& t, const Labels& g) {
  std::int64_t n = 1;
  for (int l : g) {
    std::int64_t d = dim_of(t, l);
    if (d == kDynamic) return kDynamic;
    n *= d;
  }
  return n;
}

// Reshape to dims where at most one is unknown (-1); a clear error otherwise.
Tensor reshape_checked(const std::string& eq, const Tensor& x, std::vector<std::int64_t> dims) {
  if (std::vector<std::int64_t>(x.shape().begin(), x.shape().end()) == dims && x.shape().is_static()) return x;
  int unknown = 0;
  for (auto d : dims) unknown += d == kDynamic;
  if (unknown > 1)
    bad(eq, "merging dims of " + x.spec().str() + " needs more than one dynamic size; give static sizes to all but one");
  return reshape(x, Shape(dims));
}

Term contract(const std::string& eq, Term a, Term b, const std::set<int>& keep) {
  // Labels of one operand only that nothing later needs are summed first.
  std::set<int> keep_a = keep, keep_b = keep;
  for (int l : b.labels) keep_a.insert(l);
  for (int l : a.labels) keep_b.insert(l);
  a = sum_out(a, keep_a);
  b = sum_out(b, keep_b);
  Labels batch, contracted, a_only, b_only;
  for (int l : a.labels) {
    if (has(b.labels, l)) (keep.count(l) ? batch : contracted).push_back(l);
    else a_only.push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) b_only.push_back(l);
  for (int l : contracted) {
    std::int64_t da = dim_of(a, l), db = dim_of(b, l);
    if (da != db && da != kDynamic && db != kDynamic) {
      if (da == 1) a = {sum(a.t, {static_cast<int>(std::find(a.labels.begin(), a.labels.end(), l) - a.labels.begin())}, true), a.labels};
      else if (db == 1) b = {sum(b.t, {static_cast<int>(std::find(b.labels.begin(), b.labels.end(), l) - b.labels.begin())}, true), b.labels};
      else bad(eq, std::string("label '") + (l < 1000 ? std::string(1, static_cast<char>(l)) : std::string("...")) +
                       "' has sizes " + std::to_string(da) + " and " + std::to_string(db) + ": " + a.t.spec().str() + ", " + b.t.spec().str());
    }
  }
  auto concat_labels = [](std::initializer_list<const Labels*> ls) {
    Labels r;
    for (auto* l : ls) r.insert(r.end(), l->begin(), l->end());
    return r;
  };
  // Each operand in the order that needs no copy when there is one (matmul reads it
  // transposed instead), else [batch, rows, inner] / [batch, inner, cols].
  auto arrange = [&](Term t, const Labels& free, bool is_a, bool& trans) {
    Labels plain = is_a ? concat_labels({&batch, &free, &contracted}) : concat_labels({&batch, &contracted, &free});
    Labels flipped = is_a ? concat_labels({&batch, &contracted, &free}) : concat_labels({&batch, &free, &contracted});
    if (t.labels == plain) trans = false;
    else if (t.labels == flipped) trans = true;
    else {
      // A copy either way: keep the free and contracted groups in their original relative
      // order (the innermost axis stays innermost where it can), and let matmul's transpose
      // flag absorb the difference.
      auto first = [&](const Labels& g) {
        return g.empty() ? t.labels.size() : static_cast<std::size_t>(std::find(t.labels.begin(), t.labels.end(), g[0]) - t.labels.begin());
      };
      bool free_first = first(free) < first(contracted);
      trans = is_a ? !free_first : free_first;
    }
    return transposed(t, trans ? flipped : plain);
  };
  bool ta = false, tb = false;
  a = arrange(a, a_only, true, ta);
  b = arrange(b, b_only, false, tb);
  auto batch_dims = [&](const Term& t) {
    std::vector<std::int64_t> d;
    for (int l : batch) d.push_back(dim_of(t, l));
    return d;
  };
  std::int64_t m = group_size(a, a_only), k = group_size(a, contracted), n = group_size(b, b_only);
  auto matrix = [&](const Term& t, std::int64_t r, std::int64_t c, const Labels& g1, const Labels& g2) {
    std::vector<std::int64_t> d = batch_dims(t);
    if (g1.size() == 1 && g2.size() == 1) return t.t;  // already [batch, r, c]
    d.push_back(r);
    d.push_back(c);
    return reshape_checked(eq, t.t, d);
  };
  Tensor am = ta ? matrix(a, k, m, contracted, a_only) : matrix(a, m, k, a_only, contracted);
  Tensor bm = tb ? matrix(b, n, k, b_only, contracted) : matrix(b, k, n, contracted, b_only);
  Tensor y = matmul(am, bm, ta, tb);
  // [batch, m, n] -> [batch, a_only..., b_only...]
  Labels out_labels = concat_labels({&batch, &a_only, &b_only});
  if (!(a_only.size() == 1 && b_only.size() == 1)) {
    std::vector<std::int64_t> d;
    for (std::size_t i = 0; i < batch.size(); ++i) d.push_back(y.shape()[static_cast<int>(i)]);
    for (int l : a_only) d.push_back(dim_of(a, l));
    for (int l : b_only) d.push_back(dim_of(b, l));
    y = reshape_checked(eq, y, d);
  }
  return {y, out_labels};
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  if (operands.empty()) bad(equation, "needs at least one operand");
  for (const auto& t : operands)
    if (!t.defined()) bad(equation, "an operand is undefined (default-constructed)");
  std::size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    std::size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    bad(equation, std::to_string(terms.size()) + " terms for " + std::to_string(operands.size()) + " operands");
  // Pass 1: ellipsis widths.
  int max_ell = 0;
  std::vector<int> ells(terms.size());
  for (std::size_t i = 0; i < terms.size(); ++i) {
    parse_term(equation, terms[i], operands[i].rank(), ells[i], false, 0);
    max_ell = std::max(max_ell, ells[i]);
  }
  std::vector<Term> ts;
  std::map<int, int> count;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    int e;
    Labels l = parse_term(equation, terms[i], operands[i].rank(), e, false, max_ell);
    std::set<int> seen(l.begin(), l.end());
    if (seen.size() != l.size())
      bad(equation, "a label repeats within term \"" + terms[i] + "\" (diagonals are not supported)");
    for (int x : l) ++count[x];
    ts.push_back({operands[i], l});
  }
  Labels out;
  if (arrow != std::string::npos) {
    int e;
    out = parse_term(equation, eq.substr(arrow + 2), 0, e, true, max_ell);
    std::set<int> seen(out.begin(), out.end());
    if (seen.size() != out.size()) bad(equation, "a label repeats in the output");
    for (int l : out)
      if (!count.count(l)) bad(equation, std::string("output label '") + static_cast<char>(l) + "' is in no input");
  } else {
    for (int k = 0; k < max_ell; ++k) out.push_back(1000 + k);
    for (auto [l, c] : count)
      if (l < 1000 && c == 1) out.push_back(l);
  }
  // Sizes of a label agree across operands (or are 1: broadcast).
  std::map<int, std::int64_t> size;
  for (const Term& t : ts)
    for (std::size_t i = 0; i < t.labels.size(); ++i) {
      std::int64_t d = t.t.shape()[static_cast<int>(i)];
      auto [it, fresh] = size.emplace(t.labels[i], d);
      if (!fresh && d != it->second && d != 1 && it->second != 1 && d != kDynamic && it->second != kDynamic)
        bad(equation, "operands " + describe(operands) + " disagree on the size of a label");
      if (!fresh && it->second == 1) it->second = d;
    }
  std::set<int> out_set(out.begin(), out.end());
  // Left to right: each step keeps what the output or a later operand needs.
  auto needed_after = [&](std::size_t i) {
    std::set<int> keep = out_set;
    for (std::size_t j = i + 1; j < ts.size(); ++j) keep.insert(ts[j].labels.begin(), ts[j].labels.end());
    return keep;
  };
  Term cur = sum_out(ts[0], needed_after(0));
  for (std::size_t i = 1; i < ts.size(); ++i) cur = contract(equation, cur, ts[i], needed_after(i));
  cur = sum_out(cur, out_set);
  // Output labels that are broadcast size-1 dims missing from the result cannot happen: every
  // output label is in some input, and contraction keeps it.
  return transposed(cur, out).t;
}

}  // namespace ef
