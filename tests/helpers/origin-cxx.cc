// origin-cxx.cc: std::thread targets for tests/unit/test-origin.c, built
// there with g++ and stripped (so that only RTTI can name the callables,
// as in PyTorch's stripped libraries): a lambda started in a constructor,
// a member function pointer, and a plain function pointer. Prints
// "thread TID ROLE" for each, then "ready", and sleeps until killed.
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;

static void say(const char *role) {
  pthread_mutex_lock(&out_lock);
  printf("thread %d %s\n", (int)syscall(SYS_gettid), role);
  pthread_mutex_unlock(&out_lock);
  pthread_barrier_wait(&barrier);
  for (;;)
    pause();
}

namespace pst {
struct Pool {
  std::thread t;
  explicit Pool(int n) {
    t = std::thread([n] { say(n ? "lambda" : "lambda0"); });
  }
};
struct Service {
  void loop(int) { say("member"); }
};
} // namespace pst

static void plain(int) { say("fnptr"); }

int main() {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_barrier_init(&barrier, NULL, 4);
  pst::Pool pool(1);
  pst::Service svc;
  std::thread b(&pst::Service::loop, &svc, 1);
  std::thread c(plain, 2);
  pthread_barrier_wait(&barrier);
  printf("ready\n");
  for (;;)
    pause();
}
