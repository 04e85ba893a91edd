#pragma once
// Reads saved `nvidia-smi topo -m` text as people paste it into issues and chats: tabs or spaces, ANSI
// escapes, shell prompts and other text around the table (environment dumps), NIC rows and columns (NICn with
// a "NIC Legend", or the old mlx5_* column names), with or without CPU Affinity / NUMA Affinity / GPU NUMA ID,
// N/A cells, the old SOC token, re-indented or hand-respaced tables, merged cells ("SYSSYS", "NIC11NIC12"),
// tables cut off mid-row, a `topo -p2p` matrix after it. It never guesses silently: whatever it could not
// read becomes a warning.

#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.h"

namespace scalescope::topo {

/// One token of a matrix row, split by the cell grammar.
struct CellToken {
  std::string text;  ///< the token as written ("NV12", "SYS", "0-23")
  bool link = false; ///< true when it is a link-class token: X, NV<n>, PIX, PXB, PHB, NODE, SYS, SOC, N/A
};

/// Splits a whitespace-free piece of a row into cell tokens. Merged link tokens are split by the grammar
/// X | NV<digits> | PIX | PXB | PHB | NODE | SYS | SOC | N/A ("SYSSYS" → SYS, SYS; "NV18NV18" → NV18, NV18);
/// a piece that is not entirely link tokens is one non-link token (an affinity field such as "0-23").
std::vector<CellToken> split_cell_tokens(std::string_view piece);

/// Reads one link-class token: "X" → self, "NV12" → nvlink 12, "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"
/// (old name of SYS) → their class, "N/A" → unknown. Nothing when `token` is no link class.
std::optional<Link> parse_link_token(std::string_view token);

/// Parses the first `nvidia-smi topo -m` GPU matrix in `text`. `source` names the input for the topology
/// ("file x.txt"). Throws core::Error when no GPU matrix is found (empty or foreign input, or only a
/// `topo -p2p` matrix), saying what was expected. Any other damage becomes warnings; it never throws
/// anything else.
TopologyReading parse_smi_topo(std::string_view text, const std::string& source = "text");

/// Reads `path` and parses it. Throws core::Error when the file cannot be read or holds no GPU matrix.
TopologyReading parse_smi_topo_file(const std::string& path);

}  // namespace scalescope::topo
