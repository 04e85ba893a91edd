// RDMA adapters: ibstat ("CA 'mlx5_0'", "Port 1:", "State: Active", "Physical state: LinkUp", "Rate: 200", "Link
// layer: InfiniBand"), ibstatus ("Infiniband device 'mlx5_0' port 1 status:", "state: 4: ACTIVE", "rate: 200 Gb/sec
// (4X HDR)", "link_layer: InfiniBand") and ibv_devinfo [-v] ("hca_id:\tmlx5_0", "port:\t1", "state:\tPORT_ACTIVE
// (4)", "link_layer:\tEthernet", "active_width:\t4X (2)", "active_speed:\t25.0 Gbps (32)"). One NicSeen per port:
// name "mlx5_0" for port 1 ("mlx5_0:2" for port 2 …), line rate in Gb/s (ibstat's Rate, or ibv_devinfo's width ×
// speed), link layer "IB" (InfiniBand) or "RoCE" (an RDMA device on Ethernet), state as ibstat words it ("Active",
// "Down", "Initializing", "Armed"); a device listed without any port read (`ibstat | grep mlx5`) gives NicSeen{name}
// alone. Formats as in the ibstat / ibv_devinfo -v pastes of public threads
// (linux-rdma list, Mellanox ConnectX-4/5/6 hosts).

#include "text/log_text.h"
#include "readers/system/system_tools_internal.h"

namespace scalescope::analyze::system_tools_detail {
namespace {

std::string state_word(std::string_view v) {
  // "Active" (ibstat), "PORT_ACTIVE (4)" (ibv_devinfo), "4: ACTIVE" (ibstatus)
  if (icontains(v, "ACTIVE")) return "Active";
  if (icontains(v, "DOWN")) return "Down";
  if (icontains(v, "INIT")) return "Initializing";
  if (icontains(v, "ARMED")) return "Armed";
  return std::string(v);
}

struct Port {
  bool open = false;
  int number = 1;
  std::optional<std::string> state, link_layer;
  std::optional<double> rate, width, speed;
  const Line* first = nullptr;
  const Line* state_line = nullptr;
  std::size_t indent = 0;
  bool indent_known = false;
};

class IbReader {
 public:
  explicit IbReader(Scan& scan) : scan_(scan) {}

  void run(const std::vector<Line>& lines) {
    for (const Line& l : lines) {
      const std::string_view t = l.text;
      if (t.empty() || is_elision(t)) continue;
      if (is_prompt(t) || is_fence(t)) {
        close_device();
        continue;
      }
      if (starts_with(t, "CA '")) {
        open_device(l, quoted(t.substr(3)));
        continue;
      }
      if (starts_with(t, "hca_id:")) {
        open_device(l, std::string(trim_blanks(t.substr(7))));
        continue;
      }
      if (starts_with(t, "Infiniband device '")) {  // ibstatus
        open_device(l, quoted(t.substr(18)));
        if (device_.empty()) continue;
        const std::size_t p = t.find(" port ");
        open_port(l, p == std::string_view::npos ? std::optional<int>(1) : leading_int(t.substr(p + 6)));
        continue;
      }
      if (device_.empty()) continue;
      if (starts_with(t, "Port ") && ends_with(t, ":")) {  // ibstat "Port 1:"
        close_port();
        open_port(l, leading_int(t.substr(5)));
        continue;
      }
      const auto kv = split_key_value(t);
      if (kv && kv->first == "port") {  // ibv_devinfo "port:\t1"
        close_port();
        open_port(l, small_int(kv->second));
        continue;
      }
      if (!port_.open) continue;
      if (!port_.indent_known) {
        port_.indent = l.indent;
        port_.indent_known = true;
      } else if (l.indent < port_.indent && port_.indent > 0) {
        close_port();  // the port's indented block ended
        continue;
      }
      if (!kv) continue;
      const std::string_view key = kv->first, v = kv->second;
      if (key == "State" || key == "state") {
        port_.state = key == "State" ? std::string(v) : state_word(v);
        port_.state_line = &l;
      } else if (key == "Rate" || key == "rate") {
        if (const auto n = leading_number(v)) port_.rate = n->first;
        else scan_.note(l, "IB rate '" + std::string(v) + "' is not a number; not read");
      } else if (key == "Link layer" || key == "link_layer") {
        if (iequals(v, "InfiniBand")) port_.link_layer = "IB";
        else if (iequals(v, "Ethernet")) port_.link_layer = "RoCE";
        else if (!v.empty()) port_.link_layer = std::string(v);
      } else if (key == "active_width") {
        if (const auto n = leading_int(v)) port_.width = *n;  // "4X (2)"
      } else if (key == "active_speed") {
        if (const auto n = leading_number(v)) port_.speed = n->first;  // "25.0 Gbps (32)"
      }
    }
    close_device();
  }

 private:
  // A device is named even when none of its ports is read (`ibstat | grep mlx5` prints only "CA 'mlx5_0'").
  void open_device(const Line& l, std::string name) {
    close_device();
    device_ = std::move(name);
    device_line_ = &l;
    device_named_ = false;
    if (!device_.empty()) scan_.saw(Tool::ibstat);
  }

  void close_device() {
    close_port();
    if (!device_.empty() && !device_named_ && device_line_) {
      diagnose::NicSeen n;
      n.name = device_;
      scan_.add(std::move(n), *device_line_);
    }
    device_.clear();
    device_line_ = nullptr;
    device_named_ = false;
  }

  static std::string quoted(std::string_view s) {
    if (s.empty() || s.front() != '\'') return "";
    const std::size_t end = s.find('\'', 1);
    if (end == std::string_view::npos) return "";
    return std::string(s.substr(1, end - 1));
  }

  void open_port(const Line& l, std::optional<int> number) {
    port_ = {};
    port_.open = true;
    port_.number = number.value_or(1);
    port_.first = &l;
  }

  void close_port() {
    if (!port_.open) return;
    const bool any = port_.state || port_.link_layer || port_.rate || (port_.width && port_.speed);
    if (any && !device_.empty()) {
      diagnose::NicSeen n;
      n.name = port_.number == 1 ? device_ : device_ + ":" + std::to_string(port_.number);
      if (port_.rate) n.line_gbit = port_.rate;
      else if (port_.width && port_.speed) n.line_gbit = *port_.width * *port_.speed;
      n.link_layer = port_.link_layer;
      n.state = port_.state;
      scan_.add(std::move(n), port_.state_line ? *port_.state_line : *port_.first);
      device_named_ = true;
    }
    port_ = {};
  }

  Scan& scan_;
  std::string device_;
  const Line* device_line_ = nullptr;
  bool device_named_ = false;
  Port port_;
};

}  // namespace

void read_ib_tools(const std::vector<Line>& lines, Scan& scan) { IbReader(scan).run(lines); }

}  // namespace scalescope::analyze::system_tools_detail
