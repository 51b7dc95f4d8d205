// A program that replaces only operator new(std::size_t) and operator
// delete(void *), with a bump arena of its own: every other form it calls is
// libhugeheap's, and must behave as the standard defines it, by calling the
// program's two (as libstdc++'s forms do).  Without that, a sized delete or
// delete[] would hand the arena's memory to hugeheap's free, which stops the
// program: "not allocated by hugeheap".
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "check.h"
#include "hugeheap.h"

namespace {

alignas(64) unsigned char arena[1 << 20];
std::size_t arena_used;
int news, deletes;

bool in_arena(const void *p) {
    auto address = reinterpret_cast<std::uintptr_t>(p);
    auto start = reinterpret_cast<std::uintptr_t>(arena);
    return address >= start && address < start + sizeof arena;
}

void *volatile keep;

}  // namespace

void *operator new(std::size_t size) {
    std::size_t at = (arena_used + 15) & ~std::size_t{15};
    if (at + size > sizeof arena) throw std::bad_alloc();
    arena_used = at + size;
    news++;
    return arena + at;
}

void operator delete(void *p) noexcept {
    if (p != nullptr && !in_arena(p)) std::abort();  // not from this program's new
    deletes++;
}

int main() {
    void *one = ::operator new[](100);
    CHECK(in_arena(one) && news == 1);
    ::operator delete[](one, 100);
    CHECK(deletes == 1);
    void *nothrow = ::operator new(24, std::nothrow);
    CHECK(in_arena(nothrow) && news == 2);
    ::operator delete(nothrow, 24);
    CHECK(deletes == 2);
    {
        std::vector<int> numbers;  // std::allocator: new, then sized delete
        for (int i = 0; i < 1000; i++) numbers.push_back(i);
        CHECK(in_arena(numbers.data()));
    }
    CHECK(news == deletes && news > 2);
    void *plain = std::malloc(40);  // malloc stays hugeheap's
    keep = plain;
    CHECK(hh_owns(plain));
    std::free(plain);
    return check_summary();
}
