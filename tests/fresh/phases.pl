#!/usr/bin/perl
# Passes a command's output through as it comes (progress bars included)
# and copies it to the file named by ARGV[0]. Lines "@@fresh-phase NAME
# ..." that tests/fresh/run.sh's script prints between the README
# command's parts are taken out; at each, the phase before it is printed
# as two BENCH lines: how long it took, and the longest it went without
# printing anything (a newcomer watching a silent terminal gives up).
# Exits 1 when the output ended inside a phase (the command failed there).
use strict;
use warnings;
use Time::HiRes qw(time);

my $log_path = shift @ARGV or die "usage: phases.pl LOG\n";
open(my $log, '>', $log_path) or die "phases.pl: cannot write $log_path: $!\n";
$| = 1;

my $mark = '@@fresh-phase ';
my ($phase, $started, $last_output, $longest_silence);
my $pending = '';    # a line so far that may yet be a mark
my $mid_line = 0;    # the output stopped inside a line that is no mark

sub close_phase {
  my $now = shift;
  return unless defined $phase;
  my $silence = $now - $last_output;
  $longest_silence = $silence if $silence > $longest_silence;
  printf "BENCH fresh.%s %.1f s\n", $phase, $now - $started;
  printf "BENCH fresh.%s.longest_silence %.1f s\n", $phase, $longest_silence;
}

sub open_phase {
  my ($name, $now) = @_;
  close_phase($now);
  undef $phase;
  return if $name eq 'end';
  ($phase, $started, $last_output, $longest_silence) = ($name, $now, $now, 0);
}

sub emit {
  my ($text, $now) = @_;
  print $text;
  print $log $text;
  if (defined $phase) {
    my $silence = $now - $last_output;
    $longest_silence = $silence if $silence > $longest_silence;
    $last_output = $now;
  }
}

my $ended = 0;
while (1) {
  my $n = sysread(STDIN, my $chunk, 65536);
  die "phases.pl: read: $!\n" unless defined $n;
  last if $n == 0;
  my $now = time;
  my $data = $pending . $chunk;
  $pending = '';
  while ($data =~ s/^([^\n]*\n)//) {
    my $line = $1;
    if (!$mid_line && index($line, $mark) == 0) {
      my ($name) = $line =~ /^\Q$mark\E(\S+)/;
      open_phase($name, $now);
      $ended = 1 if $name eq 'end';
    } else {
      emit($line, $now);
    }
    $mid_line = 0;
  }
  next if $data eq '';
  if (!$mid_line && index($mark, substr($data, 0, length($mark))) == 0
      && length($data) < length($mark) + 64) {
    $pending = $data;    # could still become a mark: wait for its end
  } else {
    emit($data, $now);
    $mid_line = 1;
  }
}
emit($pending, time) if $pending ne '';
if (!$ended) {
  close_phase(time) if defined $phase;
  exit 1;
}
exit 0;
