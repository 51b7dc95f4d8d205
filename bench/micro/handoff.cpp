/* Blocks handed from thread to thread, freed by C++ sized delete: LANES
 * tables of SLOTS blocks of 8-1000 bytes; each lane is worked by a succession
 * of ROUNDS threads, each of which, STEPS times, deletes the block at a random
 * slot with `operator delete[](p, size)` and puts a `new char[size]` in its
 * place, then starts its successor and ends. So most blocks a thread deletes
 * were allocated by its predecessor, a thread that is gone: the pattern of
 * Larson's server benchmark in its sized-delete form (mimalloc-bench's
 * larson-sized). Sized delete reaches the allocator's own sized free where
 * the allocator defines the C++ operators (mimalloc, jemalloc, tcmalloc do);
 * otherwise libstdc++'s operator delete(void*, size_t) calls free.
 *
 *   hh-micro-handoff [LANES [ROUNDS [STEPS [SLOTS]]]] | @FILE
 *                    default 4 lanes, 100 rounds, 200000 steps, 1000 slots */
#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>

#include "arguments.h"
#include "random.h"

namespace {

constexpr std::size_t MIN_BLOCK = 8, MAX_BLOCK = 1000;

struct Lane {
    char **blocks;
    std::size_t *sizes;
    long slot_count;
    long steps;
    long rounds_left;
    std::uint64_t state;
    std::uint64_t checksum;
};

// The lanes still running, for main to wait on (threads are detached: each
// starts its successor, as Larson's do).
std::mutex running_mutex;
std::condition_variable all_done;
long lanes_running;

void *work_lane(void *arg);

void start_thread(Lane *lane) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t id;
    if (pthread_create(&id, &attributes, work_lane, lane) != 0) {
        std::fprintf(stderr, "hh-micro-handoff: cannot start a thread\n");
        std::exit(1);
    }
    pthread_attr_destroy(&attributes);
}

void *work_lane(void *arg) {
    Lane *lane = static_cast<Lane *>(arg);
    for (long i = 0; i < lane->steps; i++) {
        std::size_t slot = micro_random_below(&lane->state, (std::uint64_t)lane->slot_count);
        std::size_t size = MIN_BLOCK + micro_random_below(&lane->state, MAX_BLOCK - MIN_BLOCK);
        if (lane->blocks[slot] != nullptr)
            ::operator delete[](lane->blocks[slot], lane->sizes[slot]);
        char *block = new char[size];
        block[0] = (char)i;
        block[size - 1] = (char)slot;
        lane->blocks[slot] = block;
        lane->sizes[slot] = size;
        const char *neighbour = lane->blocks[(slot + 1) % (std::size_t)lane->slot_count];
        lane->checksum += neighbour != nullptr ? (unsigned char)neighbour[0] : 0;
    }
    if (--lane->rounds_left > 0) {
        start_thread(lane);
    } else {
        std::lock_guard<std::mutex> hold(running_mutex);
        if (--lanes_running == 0) all_done.notify_one();
    }
    return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
    micro_arguments(&argc, &argv);
    long lanes = micro_number(argc, argv, 1, "LANES", 4, 1, 256);
    long rounds = micro_number(argc, argv, 2, "ROUNDS", 100, 1, 1L << 30);
    long steps = micro_number(argc, argv, 3, "STEPS", 200000, 1, 1L << 40);
    long slots = micro_number(argc, argv, 4, "SLOTS", 1000, 1, 1L << 24);
    Lane *all = new Lane[(std::size_t)lanes];
    lanes_running = lanes;
    for (long i = 0; i < lanes; i++) {
        all[i] = Lane{new char *[(std::size_t)slots](), new std::size_t[(std::size_t)slots](),
                      slots, steps, rounds, micro_seed((std::uint64_t)i), 0};
        start_thread(&all[i]);
    }
    {
        std::unique_lock<std::mutex> hold(running_mutex);
        all_done.wait(hold, [] { return lanes_running == 0; });
    }
    std::uint64_t checksum = 0;
    for (long i = 0; i < lanes; i++) {
        for (long s = 0; s < slots; s++)
            if (all[i].blocks[s] != nullptr) ::operator delete[](all[i].blocks[s], all[i].sizes[s]);
        delete[] all[i].blocks;
        delete[] all[i].sizes;
        checksum += all[i].checksum;
    }
    delete[] all;
    std::printf("%llu\n", (unsigned long long)checksum);
    return 0;
}
