"""background"""
