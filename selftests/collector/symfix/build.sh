#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build.sh NAME OBJDIR OUT - one symbolization fixture for symfix_test.c:
# prog and libsymfix.so linked as NAME (LINKER-PIE[-LAYOUT]) says, then
# their debug info separated the ways distributions and users do it:
#   OUT/prog, OUT/libsymfix.so            with symbols and DWARF
#   OUT/*.debug                           objcopy --only-keep-debug
#   OUT/root/.build-id/xx/yyyy.debug      the same, by build-id (a debug root)
#   OUT/stripped/                         strip --strip-all, no debuglink
#   OUT/linked/prog                       strip --strip-all + .gnu_debuglink,
#                                         prog.debug beside it
#   OUT/linked/libsymfix.so               strip --strip-debug (its .symtab
#                                         stays) + .gnu_debuglink, the debug
#                                         file in linked/.debug/
# CC names the compiler driver (it runs the linker).
set -eu
name=$1 obj=$(realpath "$2") out=$(realpath -m "$3")
cc=${CC:-cc}
IFS=- read -r linker pie layout <<<"$name"
case ${layout:-} in
'') layout_flags=() ;;
sep) layout_flags=(-Wl,-z,separate-code) ;;
nosep) layout_flags=(-Wl,-z,noseparate-code) ;;
roseg) layout_flags=(-Wl,--rosegment) ;;
*) echo "build.sh: unknown layout in $name" >&2; exit 1 ;;
esac
case $pie in
pie) pie_flags=(-pie) prog_o=$obj/prog-pie.o ;;
nopie) pie_flags=(-no-pie) prog_o=$obj/prog-nopie.o ;;
*) echo "build.sh: PIE or not in $name?" >&2; exit 1 ;;
esac

rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp/stripped" "$out.tmp/linked/.debug"
cd "$out.tmp"
ld=(-fuse-ld="$linker" -Wl,--build-id "${layout_flags[@]}")
$cc "${ld[@]}" -shared -o libsymfix.so "$obj/lib.o"
$cc "${ld[@]}" "${pie_flags[@]}" -o prog "$prog_o" -L. -lsymfix -Wl,-rpath,'$ORIGIN'
for f in prog libsymfix.so; do
	objcopy --only-keep-debug "$f" "$f.debug"
	id=$(readelf -n "$f" | awk '/Build ID:/ { print $3 }')
	[ ${#id} -ge 4 ] || { echo "build.sh: $name/$f has no build-id" >&2; exit 1; }
	mkdir -p "root/.build-id/${id:0:2}"
	cp "$f.debug" "root/.build-id/${id:0:2}/${id:2}.debug"
	strip --strip-all -o "stripped/$f" "$f"
done
strip --strip-all -o linked/prog prog
cp prog.debug linked/
objcopy --add-gnu-debuglink=linked/prog.debug linked/prog
strip --strip-debug -o linked/libsymfix.so libsymfix.so
cp libsymfix.so.debug linked/.debug/
objcopy --add-gnu-debuglink=linked/.debug/libsymfix.so.debug linked/libsymfix.so
cd /
mv "$out.tmp" "$out"
