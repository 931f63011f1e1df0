// MPI wrapper (OpenMPI) with a single-process fallback.
#include "emulator/comm.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#ifdef FEEDRATE_HAVE_MPI
#include <mpi.h>
#endif

namespace feedrate {

#ifdef FEEDRATE_HAVE_MPI

Comm::Comm(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    owns_mpi_ = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      // The step barrier calls MPI from whichever accelerator thread arrives last.
      MPI_Finalize();
      owns_mpi_ = false;
      throw std::runtime_error("the MPI library provides thread level " + std::to_string(provided) +
                               "; Feedrate needs MPI_THREAD_SERIALIZED or higher");
    }
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Comm::~Comm() {
  if (owns_mpi_) MPI_Finalize();
}

void Comm::Barrier() const { MPI_Barrier(MPI_COMM_WORLD); }

bool Comm::AnyTrue(bool local) const {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out != 0;
}

int Comm::LowestTrue(bool local) const {
  int in = local ? rank_ : size_, out = size_;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return out == size_ ? -1 : out;
}

double Comm::SumDouble(double v) const {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

void Comm::SumInPlace(std::vector<double>* v) const {
  MPI_Allreduce(MPI_IN_PLACE, v->data(), static_cast<int>(v->size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

double Comm::MaxDouble(double v) const {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

namespace {

// Every rank's element count and displacement at rank 0, for a Gatherv of `n` local elements.
struct GatherLayout {
  std::vector<int> counts, displs;
  int total = 0;
};
GatherLayout GatherCounts(int n, int rank, int size) {
  GatherLayout l;
  if (rank == 0) l.counts.resize(size);
  MPI_Gather(&n, 1, MPI_INT, l.counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    l.displs.resize(size);
    for (int r = 0; r < size; ++r) {
      l.displs[r] = l.total;
      l.total += l.counts[r];
    }
  }
  return l;
}

}  // namespace

std::vector<std::vector<double>> Comm::GatherDoubles(const std::vector<double>& local) const {
  GatherLayout l = GatherCounts(static_cast<int>(local.size()), rank_, size_);
  std::vector<double> all(static_cast<size_t>(l.total));
  MPI_Gatherv(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(), l.counts.data(), l.displs.data(),
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<std::vector<double>> out;
  for (int r = 0; rank_ == 0 && r < size_; ++r) {
    out.emplace_back(all.begin() + l.displs[r], all.begin() + l.displs[r] + l.counts[r]);
  }
  return out;
}

std::vector<std::string> Comm::GatherStrings(const std::string& local) const {
  GatherLayout l = GatherCounts(static_cast<int>(local.size()), rank_, size_);
  std::string all(static_cast<size_t>(l.total), '\0');
  MPI_Gatherv(local.data(), static_cast<int>(local.size()), MPI_CHAR, all.data(), l.counts.data(), l.displs.data(),
              MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; rank_ == 0 && r < size_; ++r) {
    out.push_back(all.substr(static_cast<size_t>(l.displs[r]), static_cast<size_t>(l.counts[r])));
  }
  return out;
}

std::string Comm::Broadcast(const std::string& value, int root) const {
  int n = static_cast<int>(value.size());
  MPI_Bcast(&n, 1, MPI_INT, root, MPI_COMM_WORLD);
  std::string out = rank_ == root ? value : std::string(static_cast<size_t>(n), '\0');
  MPI_Bcast(out.data(), n, MPI_CHAR, root, MPI_COMM_WORLD);
  return out;
}

#else  // single process

Comm::Comm(int*, char***) {}
Comm::~Comm() = default;
void Comm::Barrier() const {}
bool Comm::AnyTrue(bool local) const { return local; }
int Comm::LowestTrue(bool local) const { return local ? 0 : -1; }
double Comm::SumDouble(double v) const { return v; }
double Comm::MaxDouble(double v) const { return v; }
void Comm::SumInPlace(std::vector<double>*) const {}
std::vector<std::vector<double>> Comm::GatherDoubles(const std::vector<double>& local) const { return {local}; }
std::vector<std::string> Comm::GatherStrings(const std::string& local) const { return {local}; }
std::string Comm::Broadcast(const std::string& value, int) const { return value; }

#endif

}  // namespace feedrate
