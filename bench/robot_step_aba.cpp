// Pinocchio ABA + RK4 (one aba call per stage, joint damping) for bench/robot_step.py:
// usage robot_step_aba MODEL.bin DT STEPS [q0...]; prints cpu_us_per_step and q at the end
#include <pinocchio/multibody.hpp>
#include <pinocchio/serialization.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
int main(int argc, char **argv) {
  pinocchio::Model model;
  model.loadFromBinary(argv[1]);
  pinocchio::Data data(model);
  double dt = atof(argv[2]); long steps = atol(argv[3]);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(model.nq), v = Eigen::VectorXd::Zero(model.nv);
  for (int i = 4; i < argc && i - 4 < model.nq; i++) q[i - 4] = atof(argv[i]);
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv), a1, a2, a3, a4;
  std::clock_t c0 = std::clock();
  for (long s = 0; s < steps; s++) {
    Eigen::VectorXd d = model.damping;
    a1 = pinocchio::aba(model, data, q, v, tau - d.cwiseProduct(v));
    Eigen::VectorXd v2 = v + 0.5 * dt * a1, q2 = q + 0.5 * dt * v;
    a2 = pinocchio::aba(model, data, q2, v2, tau - d.cwiseProduct(v2));
    Eigen::VectorXd v3 = v + 0.5 * dt * a2, q3 = q + 0.5 * dt * v2;
    a3 = pinocchio::aba(model, data, q3, v3, tau - d.cwiseProduct(v3));
    Eigen::VectorXd v4 = v + dt * a3, q4 = q + dt * v3;
    a4 = pinocchio::aba(model, data, q4, v4, tau - d.cwiseProduct(v4));
    q += dt / 6.0 * (v + 2 * v2 + 2 * v3 + v4);
    v += dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4);
  }
  double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  printf("cpu_us_per_step=%.6g\n", 1e6 * cpu / steps);
  for (int i = 0; i < model.nq; i++) printf("%s%.17g", i ? "," : "q=", q[i]);
  printf("\n");
}
