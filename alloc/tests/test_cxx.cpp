// The C++ operators that libhugeheap defines itself: new and delete are its
// own (not the C++ runtime's), a failed new calls the program's new_handler
// and throws std::bad_alloc (nothrow: returns null), aligned new aligns, and
// a sized delete that names the block's size frees it (one naming a smaller
// size, which a size class cannot tell from the right one, is not stopped).
// A sized delete naming a larger size stops the program: bench/security.py's
// delete-mismatch probes test that.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "check.h"
#include "hugeheap.h"

namespace {

constexpr std::size_t IMPOSSIBLE = std::size_t{1} << 62;

// Whether the function at `address` was loaded from libhugeheap.
bool in_hugeheap(const void *address) {
    Dl_info info{};
    return dladdr(address, &info) != 0 && info.dli_fname != nullptr &&
           std::strstr(info.dli_fname, "libhugeheap") != nullptr;
}

int handler_calls;
void give_up_on_third_call() {
    if (++handler_calls == 3) std::set_new_handler(nullptr);
}

struct alignas(256) Aligned {
    char bytes[300];
};

struct Node {
    std::uint64_t value;
    Node *next;
};

void *volatile keep;  // so that no new/delete pair is optimised away

}  // namespace

int main() {
    void *(*throwing_new)(std::size_t) = &::operator new;
    void (*sized_delete)(void *, std::size_t) noexcept = &::operator delete;
    CHECK(in_hugeheap(reinterpret_cast<const void *>(throwing_new)));
    CHECK(in_hugeheap(reinterpret_cast<const void *>(sized_delete)));

    // Blocks of every kind, freed by sized delete with their own size.
    for (std::size_t size : {std::size_t{1}, std::size_t{24}, std::size_t{1000},
                             std::size_t{40000}, std::size_t{300000},
                             std::size_t{40} << 20}) {
        void *p = ::operator new(size);
        CHECK(hh_owns(p));
        std::memset(p, 1, size);
        ::operator delete(p, size);
        p = ::operator new[](size);
        keep = p;
        ::operator delete[](p, size / 2);  // wrong, but within the block: not stopped
    }
    Node *list = nullptr;
    for (int i = 0; i < 10000; i++) list = new Node{static_cast<std::uint64_t>(i), list};
    while (list != nullptr) {
        Node *next = list->next;
        delete list;  // sized: sizeof(Node)
        list = next;
    }
    std::vector<std::string> strings(1000, std::string(100, 'x'));
    CHECK(strings[999].size() == 100);

    // Aligned new.
    Aligned *aligned = new Aligned;
    CHECK(reinterpret_cast<std::uintptr_t>(aligned) % 256 == 0);
    delete aligned;
    Aligned *many = new Aligned[7];
    CHECK(reinterpret_cast<std::uintptr_t>(many) % 256 == 0);
    delete[] many;
    void *page = ::operator new(100, std::align_val_t{4096});
    CHECK(reinterpret_cast<std::uintptr_t>(page) % 4096 == 0);
    ::operator delete(page, 100, std::align_val_t{4096});

    // Failure: std::bad_alloc, or null where nothrow.
    bool thrown = false;
    try {
        keep = ::operator new(IMPOSSIBLE);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    thrown = false;
    try {
        keep = ::operator new[](IMPOSSIBLE, std::align_val_t{64});
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    CHECK(::operator new(IMPOSSIBLE, std::nothrow) == nullptr);
    CHECK(::operator new[](IMPOSSIBLE, std::align_val_t{64}, std::nothrow) == nullptr);

    // The new_handler is called until it lets go, then std::bad_alloc.
    std::set_new_handler(give_up_on_third_call);
    thrown = false;
    try {
        keep = ::operator new(IMPOSSIBLE);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    CHECK(handler_calls == 3);
    return check_summary();
}
