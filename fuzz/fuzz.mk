# fuzz.mk: GNU make rules for the libFuzzer harnesses, run by fuzz/build.sh
# in the fuzz build directory (make -f TOP/fuzz/fuzz.mk TOP=...). Every
# module the harnesses use is compiled again with clang, ASan, UBSan and
# libFuzzer's coverage instrumentation, apart from the gcc build.
CC ?= clang
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
CFLAGS := -g -O1 -fno-omit-frame-pointer $(SAN) -std=gnu11 -Wall -Wextra \
	-Werror
PKGS := libelf capstone libprotobuf-c zlib liblzma
CPPFLAGS := -include config.h -I$(TOP)/include -I$(TOP)/src -I. \
	$(shell pkg-config --cflags $(PKGS))
LIBS := $(shell pkg-config --libs $(PKGS)) -liberty

HARNESSES := fuzz_elf fuzz_lines fuzz_disasm_x86_64 fuzz_disasm_aarch64 \
	fuzz_frame fuzz_writers fuzz_proc fuzz_symtab fuzz_pyimage fuzz_tsd \
	fuzz_analyse \
	fuzz_origin

# Modules under test (the CLI, sampler and target layers are not needed).
SRCS := $(wildcard $(addprefix $(TOP)/src/,util/*.c proc/*.c elf/*.c \
	disasm/*.c libc/*.c python/*.c profile/*.c output/*.c \
	native/symtab.c native/module.c native/origin.c native/cxxname.c \
	native/resolve.c))
OBJS := $(patsubst $(TOP)/%.c,obj/%.o,$(SRCS)) obj/proto/profile.pb-c.o

all: $(HARNESSES) gen-frame-seeds capture-pyimage

config.h:
	printf '%s\n' '#define _GNU_SOURCE 1' '#define PACKAGE_NAME "pystitch"' \
	  '#define PACKAGE_VERSION "fuzz"' >$@

proto/profile.pb-c.c proto/profile.pb-c.h: $(TOP)/proto/profile.proto
	mkdir -p proto
	protoc-c --proto_path=$(TOP)/proto --c_out=proto $<

obj/%.o: $(TOP)/%.c config.h proto/profile.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link $(CPPFLAGS) -MMD -c -o $@ $<

# Generated code: not ours to warn about.
obj/proto/profile.pb-c.o: proto/profile.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -w -fsanitize=fuzzer-no-link $(CPPFLAGS) -c -o $@ $<

libpst-fuzz.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^

fuzz_disasm_x86_64: $(TOP)/fuzz/fuzz_disasm.c libpst-fuzz.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(CPPFLAGS) \
	  -DFUZZ_ARCH=PST_ARCH_X86_64 -o $@ $< libpst-fuzz.a $(LIBS)

fuzz_disasm_aarch64: $(TOP)/fuzz/fuzz_disasm.c libpst-fuzz.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(CPPFLAGS) \
	  -DFUZZ_ARCH=PST_ARCH_AARCH64 -o $@ $< libpst-fuzz.a $(LIBS)

fuzz_%: $(TOP)/fuzz/fuzz_%.c $(TOP)/fuzz/frame_image.h libpst-fuzz.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(CPPFLAGS) -o $@ $< libpst-fuzz.a \
	  $(LIBS)

# Not a harness: fuzz_pyimage's steps on a live target, its reads written
# as an input (fuzz/make_seeds.py).
capture-pyimage: $(TOP)/fuzz/fuzz_pyimage.c libpst-fuzz.a
	$(CC) $(CFLAGS) $(CPPFLAGS) -DFUZZ_CAPTURE -o $@ $< libpst-fuzz.a $(LIBS)

# Not a harness: writes the frame walker's seeds (fuzz/build.sh --seeds).
gen-frame-seeds: $(TOP)/fuzz/gen_frame_seeds.c $(TOP)/fuzz/frame_image.h \
	libpst-fuzz.a
	$(CC) $(CFLAGS) $(CPPFLAGS) -o $@ $< libpst-fuzz.a $(LIBS)

-include $(OBJS:.o=.d)
.PHONY: all
